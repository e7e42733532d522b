/**
 * The supervisor of one local sandbox: a small detached process (its own session, started with
 * `setsid`) that outlives the program that created the sandbox. It
 *
 * - starts the sandbox (bubblewrap around the relay and the server, see `launch.ts`), and is its
 *   parent: bubblewrap's `--die-with-parent` takes the sandbox down if the supervisor dies;
 * - serves the two loopback gateways (HTTP and PTY) that forward into the sandbox;
 * - enforces the lifetime: at `endAt` it kills the sandbox, whoever created it;
 * - puts the sandbox in a cgroup of its own before it runs anything (see `cgroup.ts`), where the
 *   kernel enforces its sizes, and watches it for OOM kills (recorded as events in its state);
 * - answers the control socket: `ping`, `pause` (freezes the cgroup; without one, SIGSTOP to
 *   every process of the tree), `resume`, `set_timeout`, `kill`, and for a sandbox of the warm pool `claim`
 *   (new tokens and environment to the server through its stdin, which only this process
 *   holds; new tokens to the gateways; the caller's lifetime and metadata);
 * - on the end, for any reason, kills every process of the sandbox (every member of its cgroup)
 *   and removes its directory and cgroup.
 *
 * ```sh
 * deno run … supervisor.ts $SANDBAR_HOME/sandboxes/<id>
 * ```
 *
 * It prints one JSON line on stdout, `{"event":"ready",…}` or `{"event":"error","message":…}`,
 * and never writes to stdout again (the creator may have gone by then).
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { capabilityList, capabilityNames } from "../../../shared/capability_names.ts";
import { workLimits } from "./cgroup_reserve.ts";
import { chooseCpus } from "./cpu_affinity.ts";
import { closeTreeDelegation, openTreeDelegation } from "./tree_delegation.ts";
import { MEMINFO_FILE, meminfoText, memoryView, writeInPlace } from "./meminfo.ts";
import { onPath } from "./on_path.ts";
import {
  type CgroupRef,
  cgroupStats,
  createCgroup,
  enterArgv,
  freeze,
  killAll,
  reaperArgv,
  removeCgroup,
} from "./cgroup.ts";
import {
  EGRESS_CA_DIR,
  EGRESS_SOCKET,
  newRelayKey,
  RELAY_KEY_FILE,
  RelayChannel,
} from "./channel.ts";
import type { SandboxEgress } from "./egress.ts";
import {
  type ClaimRequest,
  type ControlRequest,
  type ControlResponse,
  type LocalMetrics,
  serveControl,
} from "./control.ts";
import { type Gateway, type GatewayOptions, startGateway } from "./gateway.ts";
import { diskUsage, mountImage, removeSandboxFiles } from "./disk.ts";
import { killTree, processRef, signalTree } from "./procfs.ts";
import type { Duplex } from "./splice.ts";
import { type LocalState, readState, SandboxDir, writeAtomic, writeState } from "./state.ts";
import type { ReadySignal } from "./spawn.ts";

const LOG_LIMIT = 8 * 1024 * 1024;
const TAIL = 4096;
const MAX_TIMEOUT = 86_400;
/** How long the server may take to apply a claim. */
const CLAIM_TIMEOUT_MS = 10_000;

/** One sandbox's supervision: its processes, gateways, lifetime, cgroup and control socket. */
export class Supervisor {
  readonly dir: SandboxDir;
  state: LocalState;
  child!: Deno.ChildProcess;
  gateways: Gateway[] = [];
  /** The gateways' options, whose tokens a claim replaces. */
  gatewayOptions: GatewayOptions[] = [];
  /** Resolved when the server says `claimed`. */
  claimed = Promise.withResolvers<void>();
  claiming = false;
  channel: RelayChannel | undefined;
  egress: SandboxEgress | undefined;
  stopControl: () => void = () => {};
  timer: ReturnType<typeof setTimeout> | undefined;
  stopping: Promise<void> | undefined;
  tail = "";
  logged = 0;
  log: Deno.FsFile | undefined;
  writes: Promise<void> = Promise.resolve();
  /** The 500 ms sampling of its cgroup, stopped with it. */
  sampler: ReturnType<typeof setInterval> | undefined;
  readonly host: SupervisorHost;

  constructor(dir: SandboxDir, state: LocalState, host: SupervisorHost) {
    this.dir = dir;
    this.state = state;
    this.host = host;
  }

  save(): Promise<void> {
    const snapshot = structuredClone(this.state);
    this.writes = this.writes.then(() => writeState(this.dir, snapshot)).catch(() => {});
    return this.writes;
  }

  record(bytes: Uint8Array): void {
    this.tail = (this.tail + new TextDecoder().decode(bytes)).slice(-TAIL);
    if (!this.log || this.logged >= LOG_LIMIT) return;
    this.logged += bytes.length;
    this.log.write(bytes).catch(() => {});
  }

  /** Where the sandbox's processes hang from: bubblewrap, or this process without it. */
  get treeRoot(): number {
    return this.state.isolation === "bwrap" ? this.child.pid : Deno.pid;
  }

  async dial(port: number): Promise<Duplex> {
    if (this.state.isolation === "none") {
      const up = this.state.upstream!;
      const target = port === 9000 ? up.http : port === 9001 ? up.pty : port;
      try {
        return await Deno.connect({ hostname: "127.0.0.1", port: target });
      } catch {
        throw new Error(`nothing listens on port ${port}`);
      }
    }
    return await this.channel!.dial(port);
  }

  armTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    const ms = Math.max(0, Date.parse(this.state.endAt) - Date.now());
    this.timer = setTimeout(() => this.stop(), ms);
  }

  /**
   * From `from` to `to` by freezing (or thawing) the sandbox's cgroup; without one, by sending
   * `signal` to every process of its tree. Else nothing.
   */
  async transition(from: string, to: "paused" | "running", signal: Deno.Signal): Promise<void> {
    if (this.state.status !== from) return;
    if (this.state.cgroup) await freeze(this.state.cgroup, to === "paused");
    else signalTree(this.treeRoot, signal);
    if (to === "paused") this.watchPause();
    else this.stopReaper();
    this.state.status = to;
    // A pause stops the lifetime's clock (as E2B's does); a resume starts it again.
    if (to === "paused") {
      this.state.pausedRemainingMs = Math.max(0, Date.parse(this.state.endAt) - Date.now());
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = undefined;
    } else {
      this.resumeClock();
      this.armTimer();
    }
    await this.save();
  }

  reaper: Deno.ChildProcess | undefined;

  /** While paused: a watcher that ends the frozen processes if this supervisor dies. */
  watchPause(): void {
    if (!this.state.cgroup) return;
    const [cmd, ...args] = reaperArgv(this.state.cgroup, Deno.pid);
    try {
      this.reaper = new Deno.Command(cmd, {
        args,
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      this.reaper.unref();
    } catch { /* without it, the next look ends them */ }
  }

  stopReaper(): void {
    try {
      this.reaper?.kill("SIGKILL");
    } catch { /* gone */ }
    this.reaper = undefined;
  }

  /** The lifetime left at the pause, from now. */
  resumeClock(): void {
    const left = this.state.pausedRemainingMs;
    if (left === undefined) return;
    this.state.endAt = new Date(Date.now() + left).toISOString();
    delete this.state.pausedRemainingMs;
  }

  /**
   * Write the sandbox's `/proc/meminfo` from its memory cgroup (bound over `/proc/meminfo` inside,
   * see `meminfo.ts`), where it has a memory limit and bubblewrap.
   */
  writeMeminfo(): void {
    const ref = this.state.cgroup;
    if (!ref || this.state.resources.memory === null || this.state.isolation !== "bwrap") return;
    const dir = ref.version === 1 ? ref.dirs.memory : ref.dirs.unified;
    const view = memoryView(ref.version, dir);
    if (view === null) return;
    const programs = memoryView(ref.version, join(dir, "work")) ?? undefined;
    try {
      writeInPlace(join(this.dir.channel, MEMINFO_FILE), meminfoText(view, programs));
    } catch { /* the sandbox is being removed */ }
  }

  /** The last CPU samples: [time ms, CPU µs]. */
  cpuSamples: [number, number][] = [];

  /**
   * Sample the cgroup (every 500 ms): the CPU time for the CPU share, and the OOM kills the
   * kernel counted since the last look (an event each time).
   */
  watchMemory(): void {
    if (!this.state.cgroup || this.stopping) return;
    this.writeMeminfo();
    let count: number;
    try {
      const stats = cgroupStats(this.state.cgroup);
      count = stats.oomKills;
      if (stats.cpuUsageUs !== null) {
        this.cpuSamples = [...this.cpuSamples, [performance.now(), stats.cpuUsageUs]]
          .slice(-4) as [number, number][];
      }
    } catch {
      return;
    }
    const seen = this.state.events?.filter((e) => e.type === "oom_kill").at(-1)?.count ?? 0;
    if (count <= seen) return;
    const limit = this.state.resources.memory;
    this.state.events = [...(this.state.events ?? []), {
      type: "oom_kill" as const,
      at: new Date().toISOString(),
      message: `the kernel killed ${count - seen} process(es) of the sandbox: memory limit ` +
        `${limit} MiB reached (its programs' share: ${
          limit === null
            ? "none"
            : `${workLimits({ cpu: null, memory: limit, pids: null }).memory} MiB`
        }; the rest is its server's reserve)`,
      count,
    }].slice(-100);
    this.save();
  }

  async metrics(): Promise<LocalMetrics> {
    this.watchMemory();
    const disk = await diskUsage(this.dir.disk);
    const stats = this.state.cgroup ? cgroupStats(this.state.cgroup) : null;
    // The share over the last second or so: the newest sample against one 400 ms older or more.
    const b = this.cpuSamples.at(-1);
    const a = this.cpuSamples.findLast((s) => b !== undefined && b[0] - s[0] >= 400);
    const cores = stats?.cpuLimit ?? 1;
    const pct = a && b && b[0] > a[0] ? (b[1] - a[1]) / 1000 / (b[0] - a[0]) / cores * 100 : null;
    return {
      cpuLimit: stats?.cpuLimit ?? null,
      cpuSeconds: stats?.cpuUsageUs == null ? null : stats.cpuUsageUs / 1e6,
      cpuPct: pct === null ? null : Math.round(pct * 10) / 10,
      memoryBytes: stats?.memoryBytes ?? null,
      memoryLimitBytes: stats?.memoryLimitBytes ?? null,
      diskBytes: disk?.used ?? null,
      diskLimitBytes: this.state.resources.disk === null ? null : disk?.size ?? null,
      pids: stats?.pids ?? null,
      pidsLimit: stats?.pidsLimit ?? null,
      oomKills: stats?.oomKills ?? 0,
    };
  }

  async control(request: ControlRequest): Promise<ControlResponse> {
    const ok = (): ControlResponse & { ok: true } => ({
      ok: true,
      status: this.state.status,
      endAt: this.state.endAt,
    });
    if (this.stopping && request.op !== "kill") return { ok: false, error: "stopping" };
    switch (request.op) {
      case "ping":
        this.watchMemory(); // a caller asking now sees an OOM kill of a moment ago
        await this.writes;
        return ok();
      case "metrics":
        return { ...ok(), metrics: await this.metrics() };
      case "pause":
        await this.transition("running", "paused", "SIGSTOP");
        return ok();
      case "resume":
        await this.transition("paused", "running", "SIGCONT");
        return ok();
      case "set_timeout": {
        const s = request.seconds;
        if (!Number.isInteger(s) || s < 1 || s > MAX_TIMEOUT) {
          return { ok: false, error: `timeout must be an integer from 1 to ${MAX_TIMEOUT}` };
        }
        this.state.endAt = new Date(Date.now() + s * 1000).toISOString();
        if (this.state.status === "paused") this.state.pausedRemainingMs = s * 1000;
        else this.armTimer();
        await this.save();
        return ok();
      }
      case "claim":
        return await this.claim(request);
      case "network_update":
      case "network_audit": {
        if (!this.egress) {
          return {
            ok: false,
            error: "it was created without `network`: it has no network to change",
          };
        }
        if (request.op === "network_audit") {
          return { ...ok(), audit: this.egress.recent(request.limit) };
        }
        const closed = this.egress.update(request.network);
        const { secrets, ca } = this.state.network ?? {};
        const next = request.network === false ? { deny: ["*"] } : request.network;
        this.state.network = { ...next, ...(secrets ? { secrets } : {}), ...(ca ? { ca } : {}) };
        await this.save();
        return { ...ok(), closed };
      }
      case "kill":
        await this.stop();
        return { ok: true, status: "stopped", endAt: this.state.endAt };
      default:
        return { ok: false, error: "unknown op" };
    }
  }

  /** Hand this pooled sandbox to the caller of `request` (once). */
  async claim(request: ClaimRequest): Promise<ControlResponse> {
    if (!this.state.pool || this.claiming) return { ok: false, error: "not a pooled sandbox" };
    const s = request.seconds;
    if (!Number.isInteger(s) || s < 1 || s > MAX_TIMEOUT) {
      return { ok: false, error: `timeout must be an integer from 1 to ${MAX_TIMEOUT}` };
    }
    this.claiming = true;
    const line = JSON.stringify({
      tokens: { default: request.serverToken, access: request.accessToken },
      env: request.envs,
    }) + "\n";
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const writer = this.child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(line));
      await writer.close().catch(() => {});
      await Promise.race([
        this.claimed.promise,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error("the server did not take the claim")),
            CLAIM_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (e) {
      this.stop();
      return { ok: false, error: (e as Error).message };
    } finally {
      clearTimeout(timer);
    }
    const now = Date.now();
    this.state.serverToken = request.serverToken;
    this.state.accessToken = request.accessToken;
    this.state.gatewayToken = request.gatewayToken;
    for (const o of this.gatewayOptions) {
      o.accessToken = this.state.secure ? request.accessToken : null;
      o.gatewayToken = this.state.secure ? request.gatewayToken : null;
    }
    this.state.metadata = request.metadata;
    this.state.createdAt = new Date(now).toISOString();
    this.state.endAt = new Date(now + s * 1000).toISOString();
    delete this.state.pool;
    this.armTimer();
    await this.save();
    return { ok: true, status: this.state.status, endAt: this.state.endAt };
  }

  stop(): Promise<void> {
    return this.stopping ??= (async () => {
      if (this.timer !== undefined) clearTimeout(this.timer);
      clearInterval(this.sampler);
      this.state.status = "stopping";
      await this.save();
      this.stopControl();
      for (const g of this.gateways) g.close();
      this.channel?.close();
      await this.egress?.close();
      this.stopReaper();
      const root = processRef(this.treeRoot);
      if (this.state.cgroup) await killAll(this.state.cgroup).catch(() => {});
      if (this.state.isolation === "bwrap") killTree(root ?? undefined);
      else signalTree(Deno.pid, "SIGKILL");
      await this.child.status.catch(() => {});
      if (this.state.cgroup) removeCgroup(this.state.cgroup);
      await this.writes;
      this.log?.close();
      this.log = undefined;
      await removeSandboxFiles(this.dir).catch(() => {});
      this.host.ended();
    })();
  }
}

function becomeSubreaper(): void {
  // Without bubblewrap there is no PID namespace to hold orphans: make this process their
  // reaper (PR_SET_CHILD_SUBREAPER) so a daemonized grandchild stays in the tree we kill.
  try {
    const libc = Deno.dlopen("libc.so.6", {
      prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
    });
    libc.symbols.prctl(36, 1n, 0n, 0n, 0n);
    libc.close();
  } catch { /* best effort */ }
}

async function drain(
  stream: ReadableStream<Uint8Array>,
  onLine: ((line: string) => void) | null,
  sink: (b: Uint8Array) => void,
): Promise<void> {
  let pending = "";
  for await (const chunk of stream) {
    sink(chunk);
    if (!onLine) continue;
    pending += new TextDecoder().decode(chunk);
    let at: number;
    while ((at = pending.indexOf("\n")) >= 0) {
      onLine(pending.slice(0, at));
      pending = pending.slice(at + 1);
    }
  }
}

/** The sandbox's capability names, read from its server through the gateway. */
async function discover(state: LocalState, gatewayPort: number): Promise<string[]> {
  const headers: Record<string, string> = { authorization: `Bearer ${state.serverToken}` };
  if (state.secure && state.gatewayToken) headers["x-sandbar-gateway"] = state.gatewayToken;
  else if (state.secure) headers["x-access-token"] = state.accessToken;
  const res = await fetch(`http://127.0.0.1:${gatewayPort}/capabilities`, { headers });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`GET /capabilities answered ${res.status}`);
  }
  return [...capabilityNames(await res.json()), "ports"].sort();
}

/**
 * Run the path a first command takes once, before a pooled sandbox waits: the gateway, the
 * relay and the server's pipeline and process code are then compiled, and the claimant's first
 * command does not pay for it. A `true` that leaves nothing behind (run and waited for, so it is
 * in no process list; no file, no variable), as the pool's own identity.
 */
async function warmUp(state: LocalState, gatewayPort: number): Promise<void> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${state.serverToken}`,
    "content-type": "application/json",
  };
  if (state.secure && state.gatewayToken) headers["x-sandbar-gateway"] = state.gatewayToken;
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`http://127.0.0.1:${gatewayPort}/process/shell`, {
      method: "POST",
      headers,
      body: JSON.stringify({ cmd: "true" }),
    }).catch(() => null);
    await res?.body?.cancel();
  }
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** The process a supervisor runs in: its own (`isolation: "none"`), or the home's host. */
export interface SupervisorHost {
  /** Where its one line goes: `ready` or `error` (see `spawn.ts`). */
  say(event: ReadySignal): void;
  /** Called once when the sandbox has ended and its files are gone. */
  ended(): void;
  /** True in the host (`host.ts`): the process supervises other sandboxes too. */
  readonly shared: boolean;
}

/**
 * Start and supervise the sandbox whose directory is `path`: the supervisor once it said
 * `ready`, or null after it said `error` (the sandbox then left nothing behind).
 */
export async function supervise(path: string, host: SupervisorHost): Promise<Supervisor | null> {
  const dir = new SandboxDir(dirname(dirname(path)), basename(path));
  const state = await readState(dir);
  const say = (event: ReadySignal) => host.say(event);
  if (!state) {
    say({ event: "error", message: `no state file in ${path}` });
    return null;
  }
  // Only a sandbox its creator has just written, or a dormant one being woken: never a second
  // supervision of one that runs.
  if (state.status !== "creating" && !state.dormant) {
    say({ event: "error", message: `sandbox ${state.id} is ${state.status}, not to be started` });
    return null;
  }
  const sup = new Supervisor(dir, state, host);
  if (state.dormant) {
    // Woken after its supervisor ended during a pause: a fresh start on the same files.
    delete state.dormant;
    state.status = "creating";
    sup.resumeClock();
  }
  if (state.isolation === "none") becomeSubreaper();
  if (state.isolation === "bwrap") {
    // Before the sandbox exists: the relay's key, and the socket it will connect to.
    const key = newRelayKey();
    await writeAtomic(join(dir.run, RELAY_KEY_FILE), `${key}\n`, 0o600);
    await Deno.remove(dir.channelSocket).catch(() => {});
    sup.channel = new RelayChannel(dir.channelSocket, key);
    if (state.network) {
      // Before the sandbox starts too: its bridge connects here for every connection out.
      const socket = join(dir.channel, EGRESS_SOCKET);
      await Deno.remove(socket).catch(() => {});
      // Loaded only here: the proxy's graph (its rules, the policy compiler and zod, DNS) is
      // about 10 MiB of every supervisor's memory, and most sandboxes have no network.
      const { SandboxEgress } = await import("./egress.ts");
      sup.egress = await SandboxEgress.start(
        socket,
        state.id,
        state.network,
        join(dir.path, "egress.jsonl"),
        join(dir.path, EGRESS_CA_DIR),
      );
    }
  }
  let argv = state.launch.argv;
  if (state.resources.disk !== null) {
    try {
      await mountImage(dir.image, dir.disk); // made by the creator; mounted again after a restart
    } catch (e) {
      say({ event: "error", message: `cannot mount the sandbox's disk: ${(e as Error).message}` });
      return null;
    }
  }
  let noReserve: string | null = null;
  if (state.cgroup) {
    try {
      noReserve = createCgroup(state.cgroup, {
        cpu: state.resources.cpu,
        memory: state.resources.memory,
        pids: state.pids ?? null,
      });
    } catch (e) {
      await removeSandboxFiles(dir).catch(() => {});
      say({ event: "error", message: `cannot set the sandbox's cgroup: ${(e as Error).message}` });
      return null;
    }
    sup.writeMeminfo();
    // `nproc` and thread pools inside see the sandbox's CPUs (see `cpu_affinity.ts`).
    const taskset = state.resources.cpu === null ? null : onPath("taskset");
    const cpus = taskset && affinityFor(state.cgroup, state.resources.cpu!);
    if (taskset && cpus) argv = [taskset, "-c", cpus.join(","), ...argv];
  }
  sup.log = await Deno.open(dir.log, { append: true, create: true, mode: 0o600 });
  // Its sizes hold without it; the log says why its server has no reserve.
  if (noReserve) await sup.log.write(new TextEncoder().encode(`sandbar: ${noReserve}\n`));
  // The cgroup for the server's process trees: opened here, with no await before the spawn, so
  // that the sandbox's first process alone inherits it (`tree_delegation.ts`).
  // (On v2 only inside bubblewrap, whose script leaves `work` for the `server` leaf; see there.)
  const delegation = state.cgroup && (state.cgroup.version === 1 || state.isolation === "bwrap")
    ? openTreeDelegation(state.cgroup)
    : null;
  if (state.cgroup) {
    argv = enterArgv(state.cgroup, argv, delegation && "fd" in delegation ? [delegation.spec] : []);
  }
  const [cmd, ...args] = argv;
  try {
    sup.child = new Deno.Command(cmd, {
      args,
      env: state.launch.env,
      clearEnv: true,
      cwd: state.isolation === "none" ? dir.root : "/",
      // A pooled sandbox's server reads its claim here (server/claim.ts).
      stdin: state.pool ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } finally {
    closeTreeDelegation(delegation);
  }
  if (delegation && "reason" in delegation) {
    const why = `sandbar: no cgroup for the server's process trees: ${delegation.reason}\n`;
    await sup.log.write(new TextEncoder().encode(why));
  }
  const listening = Promise.withResolvers<
    { url: string; pty_url: string; capabilities?: unknown }
  >();
  const relayReady = sup.channel?.ready ?? Promise.resolve();
  const onLine = (line: string) => {
    try {
      const event = JSON.parse(line);
      if (event.event === "listening") listening.resolve(event);
      if (event.event === "claimed") sup.claimed.resolve();
    } catch { /* not an event */ }
  };
  const record = (b: Uint8Array) => sup.record(b);
  drain(sup.child.stdout, onLine, record).catch(() => {});
  drain(sup.child.stderr, null, record).catch(() => {});
  const exited = sup.child.status.then((s) => {
    throw new Error(`the sandbox exited during start (code ${s.code})`);
  });
  exited.catch(() => {}); // it may end long after the start; only the race below reads it
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timeout = setTimeout(
      () => reject(new Error(`the server did not listen within ${state.startTimeout} s`)),
      state.startTimeout * 1000,
    );
  });
  try {
    const [addresses] = await Promise.race([
      Promise.all([listening.promise, relayReady]),
      exited,
      late,
    ]);
    clearTimeout(timeout);
    if (state.isolation === "none") {
      state.upstream = { http: portOf(addresses.url), pty: portOf(addresses.pty_url) };
    }
    const refuse = () =>
      sup.state.status === "paused"
        ? {
          status: 409,
          code: "sandbox_paused",
          message: `Sandbox ${state.id} is paused; call resume() first`,
        }
        : null;
    const accessToken = state.secure ? state.accessToken : null;
    const gatewayToken = state.secure ? state.gatewayToken ?? null : null;
    const dial = (port: number) => sup.dial(port);
    const before = state.previousPorts; // a woken sandbox keeps its URLs where it can
    delete state.previousPorts;
    for (const defaultPort of [9000, 9001]) {
      const port = defaultPort === 9000 ? before?.http : before?.pty;
      const options = {
        sandboxId: state.id,
        defaultPort,
        port,
        accessToken,
        gatewayToken,
        dial,
        refuse,
      };
      sup.gatewayOptions.push(options);
      sup.gateways.push(startGateway(options));
    }
    await Deno.remove(dir.controlSocket).catch(() => {});
    sup.stopControl = serveControl(dir.controlSocket, (r) => sup.control(r));
    // Said in the listening line (only the sandbox's own relay and server write there); asked
    // for through the gateway when it is not (`discover`).
    const said = capabilityList(addresses.capabilities);
    state.capabilities = said
      ? [...said, "ports"].sort()
      : await discover(state, sup.gateways[0].port);
    if (state.pool) await warmUp(state, sup.gateways[0].port);
  } catch (e) {
    clearTimeout(timeout);
    const printed = sup.tail.split("\n").filter((l) => !l.startsWith('{"event":')).join("\n");
    const message = `${(e as Error).message}\n${printed}`.trim();
    await sup.stop();
    say({ event: "error", message });
    return null;
  }
  sup.child.status.then(() => sup.stop());
  state.status = "running";
  state.supervisor = processRef(Deno.pid) ?? undefined;
  if (host.shared) state.hosted = true;
  state.sandbox = processRef(sup.child.pid) ?? undefined;
  state.ports = { http: sup.gateways[0].port, pty: sup.gateways[1].port };
  await sup.save();
  sup.armTimer();
  sup.sampler = setInterval(() => sup.watchMemory(), 500);
  say({ event: "ready", pid: Deno.pid });
  return sup;
}

if (import.meta.main) {
  // A process of its own, for a sandbox without bubblewrap (whose tree is this process's).
  const path = Deno.args[0];
  if (!path) {
    console.error("usage: supervisor.ts SANDBOX_DIR");
    Deno.exit(2);
  }
  try {
    const sup = await supervise(path, {
      say: (event) => console.log(JSON.stringify(event)),
      // Signal listeners would keep this process alive; leave once the answer to a `kill` is out.
      ended: () => setTimeout(() => Deno.exit(0), 50),
      shared: false,
    });
    if (!sup) Deno.exit(1);
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
      Deno.addSignalListener(signal, () => sup.stop());
    }
  } catch (e) {
    console.log(JSON.stringify({ event: "error", message: (e as Error).message }));
    Deno.exit(1);
  }
}

/** The CPUs for a sandbox of `cores` in cgroup `ref`, among its siblings', or null for all. */
function affinityFor(ref: CgroupRef, cores: number): number[] | null {
  const dir = ref.version === 1 ? ref.dirs.cpu : ref.dirs.unified;
  return chooseCpus(cores, dirname(dir), basename(dir));
}
