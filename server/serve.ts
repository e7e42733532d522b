/**
 * Starting the server in this process: compile the policy, load named commands, build the two
 * applications and listen on the HTTP and PTY ports.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { withholdPaths } from "./files/withheld.ts";
import { pathToFileURL } from "node:url";
import { agentsConfig, resolveDataDir } from "./agents/config.ts";
import type { AgentsService } from "./agents/service.ts";
import type { SchedulerClock } from "./agents/automations/schedule.ts";
import { buildApps } from "./app.ts";
import { CommandRegistry } from "./named_commands/registry.ts";
import { ConnectionGuard } from "./pipeline/connection_guard.ts";
import { HANDLERS } from "./handlers/mod.ts";
import { type AuditSink, jsonLinesSink } from "./pipeline/audit.ts";
import { abstractSocketsUnavailable, confinements, procAccess } from "./confine/confinement.ts";
import {
  drawSocketName,
  LISTEN_TARGETS_FILE,
  recordListenTargets,
} from "../shared/listen_targets.ts";
import { compilePolicy } from "./policy/compile.ts";
import { loadPolicyFile } from "./policy/read.ts";
import type { PolicyFile } from "./policy/schema.ts";
import type { EndpointId } from "./endpoints.ts";
import { checkAskedTreeMode, closeTrees, treeMode } from "./process/trees.ts";
import { ServerState } from "./state.ts";
import { generateToken } from "./token.ts";

/** Options of {@linkcode startServer}. */
export interface StartServerOptions {
  /** Listening host; default `127.0.0.1`. */
  host?: string;
  /** HTTP port; default 9000; 0 picks a free one. */
  port?: number;
  /** PTY WebSocket port; default 9001; 0 picks a free one. */
  ptyPort?: number;
  /**
   * Listen on two abstract Unix sockets, named at random (`@sandbar-<hex>-<port>`), instead of
   * TCP, where every process the server starts is confined and Landlock scopes abstract sockets
   * (ABI 6: none of them can connect to a socket the server made); elsewhere, or with
   * `SANDBAR_ABSTRACT_SOCKETS=off`, on `host` and the ports as without it, and stderr says why.
   * For a server reached only through a relay in its own process (a sandbox's): the names are
   * recorded for it (`shared/listen_targets.ts`), in this process and in the state directory.
   */
  abstractSockets?: boolean;
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
   * How long a connection may go without a request running (from when it opens, or from the
   * end of its last answer, to the end of the next request's head) before it is closed;
   * default `SANDBAR_HEAD_TIMEOUT_MS`, else 30 000.
   */
  headTimeoutMs?: number;
  /**
   * Most connections (HTTP and PTY together) kept open; idle ones over it are closed at once;
   * default `SANDBAR_MAX_CONNECTIONS`, else 1024.
   */
  maxConnections?: number;
  /**
   * The agents group's data directory; default `SANDBAR_DATA_DIR`, else
   * `$XDG_STATE_HOME/sandbar` (`~/.local/state/sandbar`). Opened at start when an agents
   * endpoint is on; every file endpoint refuses it.
   */
  dataDir?: string;
  /**
   * The clock automations are scheduled by; default the system's. Tests give a fake one
   * (`@sinonjs/fake-timers`) to move through days, or a daylight-saving change, at once.
   */
  automationClock?: SchedulerClock;
}

/** A running server. */
export interface SandbarServer {
  /** `http://host:port`, or `http+unix://%40name` on an abstract socket. */
  url: string;
  /** `ws://host:port` of the PTY WebSocket, or `ws+unix://%40name`. */
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

/** Where one listener binds: a TCP address, or an abstract Unix socket's name (with its NUL). */
type Bind = { hostname: string; port: number } | { path: string };

function listen(
  bind: Bind,
  signal: AbortSignal,
  handler: Deno.ServeHandler<Deno.Addr>,
): Promise<Deno.HttpServer<Deno.Addr>> {
  const ready = Promise.withResolvers<void>();
  const onListen = () => ready.resolve();
  const server: Deno.HttpServer<Deno.Addr> = "path" in bind
    ? Deno.serve({ path: bind.path, signal, onListen }, handler)
    : Deno.serve({ hostname: bind.hostname, port: bind.port, signal, onListen }, handler);
  return ready.promise.then(() => server);
}

/** Endpoints that start processes as the caller: their confinement is prepared at start. */
const PROCESS_ENDPOINTS: readonly EndpointId[] = [
  "shell",
  "process_start",
  "pty_create",
  "run_code",
];

/** How long to wait before listening again after the accept loop failed. */
const RELISTEN_AFTER_MS = 250;

/**
 * A listener that comes back: `Deno.serve`'s accept loop ends for good on an error such as
 * `EMFILE` (no descriptor left); it then listens again, once the connection guard has shed idle
 * connections, instead of the server going deaf: on the same TCP port, or on an abstract socket
 * with a new name (`again`): while nothing held the old one, any process could have bound it.
 */
class Listener {
  #server: Deno.HttpServer<Deno.Addr>;
  readonly #handler: Deno.ServeHandler<Deno.Addr>;
  readonly #again: (addr: Deno.Addr) => Bind;
  readonly #signal: AbortSignal;
  readonly #onFailure: () => void;
  readonly #onListen: () => void;

  private constructor(
    server: Deno.HttpServer<Deno.Addr>,
    handler: Deno.ServeHandler<Deno.Addr>,
    again: (addr: Deno.Addr) => Bind,
    signal: AbortSignal,
    onFailure: () => void,
    onListen: () => void,
  ) {
    this.#server = server;
    this.#handler = handler;
    this.#again = again;
    this.#signal = signal;
    this.#onFailure = onFailure;
    this.#onListen = onListen;
    this.#watch();
  }

  /**
   * Listen on `bind`; after a failure, on `again(address)`. `onListen` runs after each listen
   * again (the addresses changed).
   */
  static async open(
    bind: Bind,
    again: (addr: Deno.Addr) => Bind,
    signal: AbortSignal,
    handler: Deno.ServeHandler<Deno.Addr>,
    onFailure: () => void,
    onListen: () => void = () => {},
  ): Promise<Listener> {
    const server = await listen(bind, signal, handler);
    return new Listener(server, handler, again, signal, onFailure, onListen);
  }

  get addr(): Deno.Addr {
    return this.#server.addr;
  }

  #watch(): void {
    this.#server.finished.catch(async (e) => {
      while (!this.#signal.aborted) {
        this.#onFailure();
        console.error(`sandbar: listener on ${describe(this.addr)} failed (${e}); listening again`);
        await new Promise((r) => setTimeout(r, RELISTEN_AFTER_MS));
        if (this.#signal.aborted) return;
        try {
          this.#server = await listen(this.#again(this.addr), this.#signal, this.#handler);
        } catch (again) {
          e = again;
          continue;
        }
        // Listening again whatever `onListen` meets: a failure of its own is its to report.
        this.#onListen();
        this.#watch();
        return;
      }
    });
  }

  /** Settles when the current listener has stopped. */
  finished(): Promise<void> {
    return this.#server.finished.catch(() => {});
  }
}

/** `port N`, or `@name` for an abstract socket. */
function describe(addr: Deno.Addr): string {
  if (addr.transport === "tcp" || addr.transport === "udp") return `port ${addr.port}`;
  return "path" in addr ? `@${addr.path.replace(/^\0/, "")}` : addr.transport;
}

/** The URL of a listener: `http://host:port`, or `http+unix://%40name` (`ws` for the PTY). */
function urlOf(addr: Deno.Addr, scheme: "http" | "ws"): string {
  if (addr.transport === "tcp") {
    const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
    return `${scheme}://${host}:${addr.port}`;
  }
  const path = "path" in addr ? addr.path : "";
  return `${scheme}+unix://${encodeURIComponent(path.replace(/^\0/, "@"))}`;
}

function positiveInteger(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new Error(`${name} must be a positive integer, not ${JSON.stringify(raw)}`);
  }
  return n;
}

async function loadCommands(registry: CommandRegistry, file: string): Promise<void> {
  // A file named at run time, so no analysis can see it; the literal `file://` prefix tells
  // `deno publish` the import needs no import map (it warned about a bare expression).
  const mod = await import(`file://${pathToFileURL(resolve(file)).pathname}`);
  if (typeof mod.default !== "function") {
    throw new Error(`${file}: the default export must be a function taking the registry`);
  }
  await mod.default(registry);
}

/**
 * Start the server in this process.
 *
 * @example A token is generated when none is given
 * ```ts
 * import assert from "node:assert/strict";
 * import { startServer } from "./serve.ts";
 * const root = await Deno.makeTempDir();
 * const server = await startServer({ port: 0, ptyPort: 0, root, env: {}, audit: () => {} });
 * assert.equal(server.tokenGenerated, true);
 * const res = await fetch(`${server.url}/files/list?path=${root}`); // no token
 * assert.equal(res.status, 401);
 * await res.body?.cancel();
 * await server.close();
 * await Deno.remove(root);
 * ```
 */
export async function startServer(options: StartServerOptions = {}): Promise<SandbarServer> {
  const env = options.env ?? Deno.env.toObject();
  procAccess(); // a wrong SANDBAR_PROC stops the server here, not at its first process
  checkAskedTreeMode(); // so does a SANDBAR_PROCESS_TREES that asks for what this host cannot do
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
  const stateDir = options.stateDir ?? await Deno.makeTempDir({ prefix: "sandbar-" });
  // The server's own files: refused by name to every path guard, and by where a descriptor
  // really is to the descriptor-based file code (links followed under `paths.symlinks: allow`).
  const refused = [dataDir, stateDir, ...(options.policyFile ? [resolve(options.policyFile)] : [])];
  policy.paths.refused = refused;
  withholdPaths(refused);
  const state = new ServerState(policy, root, commands, stateDir);
  const sink = options.audit ?? jsonLinesSink(Deno.stderr);
  const network = policy.network;
  // Each identity's processes reach out only through its egress proxy, audited with the rest;
  // loaded only here, so that a server without a network section (a sandbox's: its network is
  // its provider's) never loads the proxy.
  if (network) {
    const { EGRESS_SERVICE, IdentityProxies } = await import("./egress/identity_proxies.ts");
    state.service(EGRESS_SERVICE, () => new IdentityProxies(network, sink, policy.audit));
  }
  let agents: AgentsService | undefined;
  if ([...policy.endpoints.values()].some((e) => e.spec.group === "agents" && e.enabled)) {
    // Opened now, so that a store this version cannot read stops the server with the reason;
    // loaded only here, so that a server without the group never loads it.
    const [{ AGENTS_SERVICE, AgentsService }, { SOCKET_EGRESS_SERVICE, SocketProxies }] =
      await Promise.all([import("./agents/service.ts"), import("./egress/socket_proxies.ts")]);
    // Restricted agents environments reach out through proxies on sockets, audited here too.
    state.service(
      SOCKET_EGRESS_SERVICE,
      () => new SocketProxies(`${stateDir}/egress`, sink, policy.audit),
    );
    agents = await AgentsService.open(
      agentsConfig(dataDir, env, file),
      options.automationClock,
    );
    // Tool calls an agent's turn makes are refused by the same guards as requests, and audited
    // to the same place.
    agents.runtime.auditSink = sink;
    state.service(AGENTS_SERVICE, () => agents!);
    // Refused by its real path too, should the name given pass through a link.
    const real = Deno.realPathSync(dataDir);
    if (real !== dataDir) refused.push(real);
  }
  const apps = buildApps(state, handlers, sink);
  const host = options.host ?? "127.0.0.1";
  const abort = new AbortController();
  const guard = new ConnectionGuard({
    headTimeoutMs: options.headTimeoutMs ??
      positiveInteger("SANDBAR_HEAD_TIMEOUT_MS", env.SANDBAR_HEAD_TIMEOUT_MS),
    maxConnections: options.maxConnections ??
      positiveInteger("SANDBAR_MAX_CONNECTIONS", env.SANDBAR_MAX_CONNECTIONS),
  });
  const shed = () => guard.scan(true);
  const httpHandler = guard.track(apps.http.fetch as Deno.ServeHandler<Deno.Addr>);
  const ptyHandler = guard.track(apps.pty.fetch as Deno.ServeHandler<Deno.Addr>);
  const port = options.port ?? 9000;
  const ptyPort = options.ptyPort ?? 9001;
  // Abstract sockets where asked and held by the kernel; TCP otherwise, and stderr says why.
  const noSockets = options.abstractSockets
    ? abstractSocketsUnavailable({ SANDBAR_ABSTRACT_SOCKETS: env.SANDBAR_ABSTRACT_SOCKETS })
    : "not asked";
  const sockets = noSockets === null;
  if (options.abstractSockets && !sockets) {
    console.error(`sandbar: listening on TCP, not on abstract sockets: ${noSockets}`);
  }
  // The relay's port numbers for the two sockets: those asked for (9000 and 9001 in a sandbox).
  const relayPorts = { http: port || 9000, pty: ptyPort || 9001 };
  const bindOf = (which: "http" | "pty", tcpPort: number): Bind =>
    sockets ? { path: drawSocketName(relayPorts[which]) } : { hostname: host, port: tcpPort };
  const again = (which: "http" | "pty") => (addr: Deno.Addr): Bind =>
    bindOf(which, addr.transport === "tcp" ? addr.port : 0);
  const httpBind = bindOf("http", port);
  const ptyBind = bindOf("pty", ptyPort);
  const boundAddr = (bind: Bind): Deno.Addr =>
    "path" in bind
      ? { transport: "unix", path: bind.path }
      : { transport: "tcp", hostname: bind.hostname, port: bind.port };
  const addresses = (http: Deno.Addr, pty: Deno.Addr) => ({
    url: urlOf(http, "http"),
    ptyUrl: urlOf(pty, "ws"),
  });
  // Where the relays find the server (`shared/listen_targets.ts`): in this process, and in the
  // state directory (which no confined process may write) for a relay of its own. Asked for
  // abstract sockets, the server always records: their names, `tcp` where it fell back to TCP,
  // and null for a listener that failed, from the moment it learns of it until it listens again
  // (a relay never dials a name the server may have given up). The file is opened once and
  // rewritten in place: a listener fails for want of descriptors, which is when the record must
  // still be written; a relay that reads it half written finds no record, and dials nothing.
  const listeners: { http?: Listener; pty?: Listener } = {};
  const down = new Set<"http" | "pty">();
  let targetsFile: Deno.FsFile | undefined;
  if (options.abstractSockets) {
    targetsFile = Deno.openSync(join(stateDir, LISTEN_TARGETS_FILE), {
      write: true,
      create: true,
      truncate: true,
      mode: 0o600,
    });
  }
  const publish = () => {
    if (!targetsFile) return;
    const value = (which: "http" | "pty"): string | null => {
      const addr = listeners[which]?.addr;
      if (!addr || down.has(which)) return null;
      return "path" in addr ? addr.path : "tcp";
    };
    const bytes = new TextEncoder().encode(recordListenTargets({
      [relayPorts.http]: value("http"),
      [relayPorts.pty]: value("pty"),
    }));
    try {
      targetsFile.seekSync(0, Deno.SeekMode.Start);
      targetsFile.truncateSync(0);
      for (let at = 0; at < bytes.length;) at += targetsFile.writeSync(bytes.subarray(at));
    } catch (e) {
      console.error(`sandbar: writing where the server listens: ${(e as Error).message}`);
    }
    if (listeners.http && listeners.pty) {
      state.addresses = addresses(listeners.http.addr, listeners.pty.addr);
    }
  };
  /** A listener's failure: marked down for the relays first, then idle connections shed. */
  const failed = (which: "http" | "pty") => () => {
    down.add(which);
    publish();
    shed();
  };
  const relistened = (which: "http" | "pty") => () => {
    down.delete(which);
    publish();
  };
  // The default identity's confinement is made ahead of the first command, on its own thread:
  // its one-time set-up would otherwise be that command's wait (on TCP, 65,534 Landlock port
  // rules and their merge into a domain, ~0.1 s; see docs/security.md). How process trees are
  // ended is found then too (libc loaded, a cgroup probed: 15-90 ms measured here). Making the
  // worker blocks this thread for 20-50 ms.
  const prepareDefault = () => {
    try {
      treeMode(); // how process trees are ended: found now, not at the first process
      confinements(state).spawner("default");
    } catch (e) {
      // Not fatal here: the first process start makes it again and reports the reason.
      console.error(`sandbar: preparing the default confinement: ${(e as Error).message}`);
    }
  };
  const preparing = PROCESS_ENDPOINTS.some((id) => policy.endpoints.get(id)?.enabled);
  // With both ports asked for by number (a sandbox's 9000 and 9001), or on abstract sockets (no
  // port to close), what its rules close is known now: it starts before listening, and its thread
  // builds the rules while the caller learns that the server listens and makes its first request
  // (in a local sandbox the rules were done 40-70 ms after the first command arrived when it
  // started after the listening line; the caller's first request then also waited for this
  // thread's 20-50 ms). Bound as asked or not at all: a failed listen ends the server, and its
  // confinement with it. On abstract sockets, made after the line instead, it was measured (session
  // 12, interleaved with this order): the line came 20-45 ms sooner, but the caller's first request
  // (`/capabilities`) then waited for the worker's making, and create to the first command's result
  // did not move (local 0.95-1.05 of this order over three runs, docker 0.99-1.01): kept here.
  // Measured again in session 14, with no request left before the first command (both providers
  // read the capability names from the line): a local create returned ~20 ms sooner and its first
  // command waited ~20 ms longer (p50 of the runs' p50s 199.5 against 198.5 ms, 6 rounds of 10).
  const early = preparing && (sockets || (port !== 0 && ptyPort !== 0));
  if (early) {
    state.addresses = addresses(boundAddr(httpBind), boundAddr(ptyBind));
    prepareDefault();
  }
  let http: Listener;
  let pty: Listener;
  try {
    http = listeners.http = await Listener.open(
      httpBind,
      again("http"),
      abort.signal,
      httpHandler,
      failed("http"),
      relistened("http"),
    );
    pty = listeners.pty = await Listener.open(
      ptyBind,
      again("pty"),
      abort.signal,
      ptyHandler,
      failed("pty"),
      relistened("pty"),
    );
  } catch (e) {
    abort.abort();
    guard.close();
    targetsFile?.close();
    await state.close();
    throw e;
  }
  // On abstract sockets the guard watches no port: every connection there comes through the
  // host's gateway and the relay, which forwards only a whole request head read within its own
  // head timeout, one request per connection (`Connection: close`; `sdk/providers/local/
  // gateway.ts`), so no idle connection is left for the guard to shed.
  for (const l of [http, pty]) if (l.addr.transport === "tcp") guard.watchPort(l.addr.port);
  state.addresses = addresses(http.addr, pty.addr);
  publish();
  // Listening: automations due (or missed while stopped) may now fire.
  agents?.automations.start(state);
  let closing: Promise<void> | undefined;
  // A port picked at listening (0): prepared once the caller has been told the server listens
  // (a timer, after this function's caller has printed its line), so that the worker's making
  // overlaps the caller's way to its first request instead of delaying the line.
  const prepare = preparing && !early ? setTimeout(prepareDefault, 0) : undefined;
  return {
    url: state.addresses.url,
    ptyUrl: state.addresses.ptyUrl,
    token,
    tokenGenerated: !given,
    state,
    close: () =>
      closing ??= (async () => {
        clearTimeout(prepare);
        guard.close();
        await state.close();
        // Whatever a process left behind (a tree not yet ended) ends with the server.
        closeTrees();
        abort.abort();
        await Promise.allSettled([http.finished(), pty.finished()]);
        targetsFile?.close();
        if (!options.stateDir) await Deno.remove(stateDir, { recursive: true }).catch(() => {});
      })(),
  };
}
