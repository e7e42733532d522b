/**
 * Starting the server in this process: compile the policy, load named commands, build the two
 * applications and listen on the HTTP and PTY ports.
 *
 * @module
 */

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { agentsConfig, resolveDataDir } from "./agents/config.ts";
import { AGENTS_SERVICE, AgentsService } from "./agents/service.ts";
import { buildApps } from "./app.ts";
import { CommandRegistry } from "./commands/registry.ts";
import { HANDLERS } from "./handlers/mod.ts";
import { type AuditSink, jsonLinesSink } from "./middleware/audit/index.ts";
import { compilePolicy } from "./policy/compile.ts";
import { loadPolicyFile } from "./policy/load.ts";
import type { PolicyFile } from "./policy/schema.ts";
import { ServerState } from "./state.ts";

/** Options of {@linkcode startServer}. */
export interface StartServerOptions {
  /** Listening host; default `127.0.0.1`. */
  host?: string;
  /** HTTP port; default 9000; 0 picks a free one. */
  port?: number;
  /** PTY WebSocket port; default 9001; 0 picks a free one. */
  ptyPort?: number;
  /** A JSONC policy file. */
  policyFile?: string;
  /** Or a policy object (used when no file is given). */
  policy?: PolicyFile;
  /** Root directory; default the current directory. */
  root?: string;
  /** The default identity's token; default `SVC_SERVER_TOKEN`, else one is generated. */
  token?: string;
  /** A commands file whose default export receives the registry. */
  commandsFile?: string;
  /** A registry to use (commands from `commandsFile` are added to it). */
  commands?: CommandRegistry;
  /** Environment for group switches and `token_env`; default `Deno.env`. */
  env?: Record<string, string | undefined>;
  /** Where audit lines go; default stderr. */
  audit?: AuditSink;
  /** The server's private directory for temp files; default a new temp directory. */
  stateDir?: string;
  /**
   * The agents group's data directory; default `SANDBAR_DATA_DIR`, else
   * `$XDG_STATE_HOME/sandbar` (`~/.local/state/sandbar`). Opened at start when an agents
   * endpoint is on; every file endpoint refuses it.
   */
  dataDir?: string;
}

/** A running server. */
export interface SandbarServer {
  /** `http://host:port`. */
  url: string;
  /** `ws://host:port` of the PTY WebSocket. */
  ptyUrl: string;
  /** The default identity's token. */
  token: string;
  /** True when the token was generated rather than given. */
  tokenGenerated: boolean;
  /** The shared state. */
  state: ServerState;
  /** Stop listening and close every service. */
  close(): Promise<void>;
}

/**
 * A random token: 32 bytes, base64url.
 *
 * @example
 * ```ts
 * import { generateToken } from "./serve.ts";
 * generateToken().length; // 43
 * ```
 */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

function listen(
  hostname: string,
  port: number,
  signal: AbortSignal,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Promise<Deno.HttpServer<Deno.NetAddr>> {
  const ready = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname, port, signal, onListen: () => ready.resolve() }, handler);
  return ready.promise.then(() => server);
}

async function loadCommands(registry: CommandRegistry, file: string): Promise<void> {
  const mod = await import(pathToFileURL(resolve(file)).href);
  if (typeof mod.default !== "function") {
    throw new Error(`${file}: the default export must be a function taking the registry`);
  }
  await mod.default(registry);
}

/**
 * Start the server in this process.
 *
 * @example
 * ```ts ignore
 * import { startServer } from "@sandbar/sandbar/server";
 * const server = await startServer({ port: 0, ptyPort: 0, root: "/workspace" });
 * console.log(server.url, server.token);
 * await server.close();
 * ```
 */
export async function startServer(options: StartServerOptions = {}): Promise<SandbarServer> {
  const env = options.env ?? Deno.env.toObject();
  const root = resolve(options.root ?? Deno.cwd());
  const file = options.policyFile ? await loadPolicyFile(options.policyFile) : options.policy;
  const given = options.token ?? env.SVC_SERVER_TOKEN;
  const token = given || generateToken();
  const commands = options.commands ?? new CommandRegistry();
  if (options.commandsFile) await loadCommands(commands, options.commandsFile);
  const handlers = HANDLERS;
  const policy = compilePolicy(file ?? {}, {
    root,
    env,
    implemented: new Set(Object.keys(handlers)),
    defaultToken: token,
    configured: file !== undefined,
  });
  const dataDir = resolveDataDir(options.dataDir, env);
  const refused = [dataDir];
  policy.paths.refused = refused;
  const stateDir = options.stateDir ?? await Deno.makeTempDir({ prefix: "sandbar-" });
  const state = new ServerState(policy, root, commands, stateDir);
  if ([...policy.endpoints.values()].some((e) => e.spec.group === "agents" && e.enabled)) {
    // Opened now, so that a store this version cannot read stops the server with the reason.
    const agents = await AgentsService.open(agentsConfig(dataDir, env, file));
    state.service(AGENTS_SERVICE, () => agents);
    // Refused by its real path too, should the name given pass through a link.
    const real = Deno.realPathSync(dataDir);
    if (real !== dataDir) refused.push(real);
  }
  const apps = buildApps(state, handlers, options.audit ?? jsonLinesSink(Deno.stderr));
  const host = options.host ?? "127.0.0.1";
  const abort = new AbortController();
  const http = await listen(host, options.port ?? 9000, abort.signal, apps.http.fetch);
  const pty = await listen(host, options.ptyPort ?? 9001, abort.signal, apps.pty.fetch);
  const hostPart = host.includes(":") ? `[${host}]` : host;
  state.addresses = {
    url: `http://${hostPart}:${http.addr.port}`,
    ptyUrl: `ws://${hostPart}:${pty.addr.port}`,
  };
  let closing: Promise<void> | undefined;
  return {
    url: state.addresses.url,
    ptyUrl: state.addresses.ptyUrl,
    token,
    tokenGenerated: !given,
    state,
    close: () =>
      closing ??= (async () => {
        await state.close();
        abort.abort();
        await Promise.allSettled([http.finished, pty.finished]);
        if (!options.stateDir) await Deno.remove(stateDir, { recursive: true }).catch(() => {});
      })(),
  };
}
