/**
 * `sandbox.startServer()`: start the server program in the sandbox as a background command and
 * wait until it answers `/health`.
 *
 * Port 9000 is the sandbox's own server: the data plane every other call goes through, started
 * with the sandbox. So it is never started twice there:
 * - with no options that change the server (`policy`, `commands`, `token`, `env`, `command`),
 *   the server on 9000 already is the one asked for: `startServer()` waits until it answers and
 *   returns its client (`sandbox.server`);
 * - with such options and no `port`, the new server gets the first free pair of ports from 9100
 *   (HTTP and PTY: `port`, `port + 1`), read from the sandbox's listening sockets;
 * - with such options and `port: 9000`, it is a `ValidationError` naming `port`.
 *
 * @module
 */

import type { ServerClient } from "../client/server_client.ts";
import {
  ConnectionError,
  EndpointNotAvailableError,
  PolicyDeniedError,
  ProviderFeatureNotSupportedError,
  ValidationError,
} from "../errors/mod.ts";
import { checkOptions, timeoutSeconds } from "../errors/option_checks.ts";

const START_OPTIONS = ["port", "commands", "policy", "token", "env", "command", "wait", "timeout"];

/** Options of `sandbox.startServer`. */
export interface StartServerOptions {
  /**
   * HTTP port inside the sandbox; its PTY port is the next one. Default: 9000, the sandbox's own
   * server, when nothing else is asked; else the first free pair from 9100.
   */
  port?: number;
  /** A named-commands file (`.ts`) inside the sandbox. */
  commands?: string;
  /** A policy object (the server's policy file shape) or a preset name. */
  policy?: Record<string, unknown> | string;
  /** The default identity's token (default: a new random one). */
  token?: string;
  /** Environment variables of the server process. */
  env?: Record<string, string>;
  /** The whole command line instead of the default one (a shell string or an argv). */
  command?: string | string[];
  /** Wait until it answers `/health` (default true). */
  wait?: boolean;
  /** Seconds to wait (default 30); then `ConnectionError`. Also the client's request timeout. */
  timeout?: number;
}

/** What starting a server needs from its sandbox. */
export interface ServerHost {
  /** The sandbox's own server client (port 9000). */
  server: ServerClient;
  /** The argv that runs `server/main.ts` inside the sandbox, or null. */
  serverCommand: readonly string[] | null;
  /** A client for a port. */
  serverAt(
    port: number,
    options: { token: string; ptyPort: number; timeout: number },
  ): ServerClient;
}

function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function policyWithToken(policy: StartServerOptions["policy"], token: string) {
  const file: Record<string, unknown> = typeof policy === "string"
    ? { preset: policy }
    : { ...policy };
  const identities = Array.isArray(file.identities) ? file.identities : [];
  if (identities.some((i) => (i as { id?: string })?.id === "default")) {
    throw new ValidationError('policy.identities must not list "default"', {
      suggestion: "Pass the default identity's token as `token`.",
    });
  }
  file.identities = [...identities, { id: "default", token, scopes: ["*"] }];
  return file;
}

const OWN_PORT = 9000;
const FIRST_EXTRA_PORT = 9100;
// Options that make a server other than the sandbox's own.
const SHAPING = ["policy", "commands", "token", "env", "command"] as const;

/**
 * The first `port` from 9100 (even steps) where neither `port` nor `port + 1` is listening in the
 * sandbox. Without the system group (a policy may switch it off) it is 9100, and a taken port
 * shows as the new server's own start error.
 */
async function freePortPair(server: ServerClient): Promise<number> {
  let busy = new Set<number>();
  try {
    busy = new Set((await server.system.ports()).map((p) => p.port));
  } catch (e) {
    if (!(e instanceof EndpointNotAvailableError || e instanceof PolicyDeniedError)) throw e;
  }
  let port = FIRST_EXTRA_PORT;
  while (busy.has(port) || busy.has(port + 1)) port += 2;
  if (port > 65534) throw new ConnectionError("No free pair of ports from 9100 in the sandbox");
  return port;
}

/** Wait until `client` answers `/health`, or throw `ConnectionError` after `timeout` seconds. */
async function awaitHealth(client: ServerClient, port: number, timeout: number): Promise<void> {
  const deadline = Date.now() + timeout * 1000;
  while (!(await client.health({ timeout: 2 }))) {
    if (Date.now() >= deadline) {
      throw new ConnectionError(`The server on port ${port} did not answer within ${timeout} s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Start a server in the sandbox; see {@linkcode StartServerOptions} and the module's notes. */
export async function startServer(
  host: ServerHost,
  options: StartServerOptions,
): Promise<ServerClient> {
  checkOptions("startServer", options, START_OPTIONS);
  const timeout = timeoutSeconds("timeout", options.timeout ?? 30);
  if (
    options.port !== undefined &&
    (!Number.isInteger(options.port) || options.port < 1 || options.port > 65534)
  ) {
    throw new ValidationError(`port must be an integer from 1 to 65534, got ${options.port}`);
  }
  const shaping = SHAPING.filter((key) => options[key] !== undefined);
  if (shaping.length === 0 && (options.port ?? OWN_PORT) === OWN_PORT) {
    // The server asked for is the sandbox's own, started with it: wait for it, start nothing.
    if (options.wait !== false) await awaitHealth(host.server, OWN_PORT, timeout);
    return host.server;
  }
  if (options.port === OWN_PORT) {
    throw new ValidationError(
      `port 9000 is the sandbox's own server; a server with ${shaping.join(", ")} needs another`,
      {
        suggestion: "Leave `port` out to get the first free port from 9100, or pass another port.",
      },
    );
  }
  const port = options.port ?? await freePortPair(host.server);
  const token = options.token ?? newToken();
  let argv: string | string[];
  if (options.command !== undefined) {
    argv = options.command;
  } else {
    if (!host.serverCommand) {
      throw new ProviderFeatureNotSupportedError("This provider cannot start a sandbar server", {
        suggestion: "Pass the server's command line as `command`.",
      });
    }
    const policyPath = `.sandbar/servers/${port}/policy.json`;
    await host.server.files.upload(
      policyPath,
      JSON.stringify(policyWithToken(options.policy, token)),
    );
    argv = [
      ...host.serverCommand,
      "--port",
      String(port),
      "--pty-port",
      String(port + 1),
      "--policy",
      policyPath,
      ...(options.commands ? ["--commands", options.commands] : []),
    ];
  }
  const started = await host.server.process.start(argv, {
    env: options.env,
    stdin: false,
    tag: `sandbar-server:${port}`,
  });
  const client = host.serverAt(port, { token, ptyPort: port + 1, timeout });
  if (options.wait === false) return client;
  const deadline = Date.now() + timeout * 1000;
  while (Date.now() < deadline) {
    if (await client.health({ timeout: 2 })) return client;
    const info = await host.server.process.get(started.pid);
    if (!info.running) {
      const out = await host.server.process.output(started.pid);
      const text = out.chunks.map((c) => c.data).join("").slice(-2000);
      throw new ConnectionError(`The server on port ${port} exited (code ${info.exitCode})`, {
        suggestion: `Its output ends with:\n${text}`,
      });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await host.server.process.kill(started.pid).catch(() => {});
  throw new ConnectionError(`The server on port ${port} did not answer within ${timeout} s`);
}
