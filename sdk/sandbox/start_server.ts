/**
 * `sandbox.startServer()`: start another in-sandbox server (another port, another policy, named
 * commands of its own) as a background command, and wait until it answers `/health`.
 *
 * @module
 */

import type { ServerClient } from "../client/server_client.ts";
import {
  ConnectionError,
  ProviderFeatureNotSupportedError,
  ValidationError,
} from "../errors/mod.ts";
import { checkOptions, timeoutSeconds } from "../errors/option_checks.ts";

const START_OPTIONS = ["port", "commands", "policy", "token", "env", "command", "wait", "timeout"];

/** Options of `sandbox.startServer`. */
export interface StartServerOptions {
  /** HTTP port inside the sandbox (default 9000); its PTY port is the next one. */
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

/** Start a server in the sandbox; see {@linkcode StartServerOptions}. */
export async function startServer(
  host: ServerHost,
  options: StartServerOptions,
): Promise<ServerClient> {
  checkOptions("startServer", options, START_OPTIONS);
  const port = options.port ?? 9000;
  const timeout = timeoutSeconds("timeout", options.timeout ?? 30);
  if (!Number.isInteger(port) || port < 1 || port > 65534) {
    throw new ValidationError(`port must be an integer from 1 to 65534, got ${port}`);
  }
  const custom = options.policy ?? options.commands ?? options.command ?? options.token;
  if (port === 9000 && custom === undefined && (await host.server.health())) {
    return host.server; // the sandbox's own server already runs there
  }
  if (port === 9000) {
    throw new ValidationError("Port 9000 is the sandbox's own server", {
      suggestion: "Start another server on another port: startServer({ port: 9100, ... }).",
    });
  }
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
