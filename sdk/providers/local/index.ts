/**
 * The `local` provider, the default: a sandbox is an isolated process tree on this machine
 * (bubblewrap namespaces, required unless `isolation: "none"` is asked for; Deno permissions
 * always) running the
 * in-sandbox server, with its own home directory, a detached supervisor that enforces its
 * lifetime (the home's host process, `host.ts`, supervises every sandbox with bubblewrap), and
 * its state on disk so `list`, `connect` and `killById` work from any process of
 * the same user. See `docs/sdk/sandbox.md`.
 *
 * @module
 */

import type { NetworkConfig } from "../../../server/egress/rules.ts";
import type { AuditEntry } from "../../../server/pipeline/audit.ts";
import { join } from "node:path";
import {
  ProviderFeatureNotSupportedError,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
  ValidationError,
} from "../../errors/mod.ts";
import type { SandboxEvent, SandboxInfo, SandboxMetrics } from "../../models/sandbox.ts";
import { newSandboxId, newSandboxToken } from "../ids.ts";
import { placeholderEnvs, withPlaceholders } from "../secret_placeholders.ts";
import type {
  PortAddress,
  ProviderCreateRequest,
  ProviderListQuery,
  SandboxHandle,
  SandboxProvider,
} from "../types.ts";
import { cgroupRef, cgroupSupport, killAll, removeCgroup, renewedCgroup } from "./cgroup.ts";
import { diskSupport, mountImage, prepareDisk, removeSandboxFiles, unmount } from "./disk.ts";
import {
  controlCall,
  type ControlRequest,
  ControlUnavailable,
  type LocalMetrics,
} from "./control.ts";
import { EGRESS_CA_DIR } from "./channel.ts";
import { denoDir, findBwrap, INSIDE_DENO, launchPlan } from "./launch.ts";
import { cacheSandboxModules, type PackageSource, packageSource } from "./package_source.ts";
import { warmModuleCache } from "./module_cache.ts";
import { isAlive, killTree, procReadable } from "./procfs.ts";
import {
  type Isolation,
  type LocalState,
  readState,
  sandbarHome,
  SandboxDir,
  sandboxIds,
  writeAtomic,
  writeState,
} from "./state.ts";
import { type ReadySignal, readySignal, spawnSupervisor } from "./spawn.ts";
import { superviseInHost } from "./host_client.ts";
import { PoolDir, poolKey, poolSettings, poolSpec, spawnFiller } from "./pool.ts";

/** Options of {@linkcode LocalProvider}. */
export interface LocalProviderOptions {
  /** Where sandboxes live; default `$SANDBAR_HOME`, else `~/.local/state/sandbar`. */
  home?: string;
  /**
   * The default isolation of its sandboxes (a `create` may ask otherwise): `bwrap` (bubblewrap
   * namespaces; creating fails when `bwrap` is not on PATH) or `none` (Deno permissions only).
   * Default: `SANDBAR_ISOLATION` when set, else `bwrap`. Never a silent fallback.
   */
  isolation?: Isolation;
  /**
   * Whether sandboxes get a cgroup and a disk image, where the host allows (default true). With
   * false nothing is enforced, `info` reports no sizes, and sizes asked for are refused (E8004).
   */
  limits?: boolean;
  /**
   * Sandboxes kept ready per option set (the warm pool, `pool.ts`); default `SANDBAR_POOL`,
   * else 0: off. A create whose options match a ready one gets it in tens of milliseconds.
   */
  pool?: number;
}

/** Starts a pooled sandbox on a provider (set by the class, for {@linkcode fillPool}). */
let startPooled: (
  provider: LocalProvider,
  request: ProviderCreateRequest,
  isolation: Isolation,
  key: string,
) => Promise<string>;

const RESERVED_ENV = /^(SVC_SERVER_TOKEN|SANDBAR_.*)$/;
const DEFAULT_START_TIMEOUT = 60;

/**
 * The sizes a sandbox gets when the caller names none, where the host can enforce them
 * (`docs/sdk/sandbox.md`, Sizes): 2 cores (at most the host's), 2048 MiB of memory (swap
 * included), 1024 processes and threads, 2048 MiB of disk.
 */
export const DEFAULT_SIZES = { cpu: 2, memory: 2048, pids: 1024, disk: 2048 } as const;

/** The environment variable the access token reaches the in-sandbox server through. */
export const ACCESS_TOKEN_ENV = "SANDBAR_ACCESS_TOKEN";

/**
 * The access token's identity in the in-sandbox server: files only. It is what a request sent
 * with nothing but `X-Access-Token` (an upload or download URL) is served as.
 */
const ACCESS_IDENTITY = {
  id: "access",
  token_env: ACCESS_TOKEN_ENV,
  scopes: ["files:read", "files:write"],
};

/** The in-sandbox server's policy: the whole sandbox file system, system trees read-only. */
function defaultPolicy(isolation: Isolation, home: string): Record<string, unknown> {
  if (isolation === "none") return { paths: { allow: [home] } };
  return {
    paths: {
      allow: ["/"],
      read_only: [
        "/usr",
        "/etc",
        "/opt/sandbar",
        "/proc",
        "/sys",
        "/dev",
        ...(packageSource().dir ? [packageSource().dir!] : []),
        denoDir(),
      ],
      deny: ["/run/sandbar", "/run/sandbar/**", "/run/sandbar-channel", "/run/sandbar-channel/**"],
    },
  };
}

function policyFor(
  request: ProviderCreateRequest,
  isolation: Isolation,
  home: string,
): Record<string, unknown> {
  const base = defaultPolicy(isolation, home);
  const given = typeof request.policy === "string"
    ? { preset: request.policy }
    : request.policy ?? {};
  const identities = Array.isArray(given.identities) ? given.identities : [];
  return { ...base, ...given, identities: [...identities, ACCESS_IDENTITY] };
}

/**
 * Check a policy with the server's own schema before anything starts, so a mistake is a
 * `ValidationError` naming the key, not a sandbox that fails to start. (The validator loads
 * zod and jsonc-parser, so only policies given by the caller are checked this way.)
 */
async function validatePolicy(policy: Record<string, unknown>): Promise<void> {
  let policyProblems: typeof import("../../../server/policy/load.ts").policyProblems;
  try {
    ({ policyProblems } = await import("../../../server/policy/load.ts"));
  } catch {
    return; // no import map here for its npm packages: the server checks it when it starts
  }
  // Named by key path, never by a line of the policy.json the provider writes: the caller gave
  // an object and never sees that file.
  const problems = policyProblems(policy).map((p) => p.message);
  if (problems.length > 0) {
    throw new ValidationError(`Invalid policy: ${problems.join("; ")}`, {
      suggestion: "The policy is the server's policy file as an object; every key, its type and " +
        "default: docs/server/policy_reference.md.",
    });
  }
}

/**
 * The local provider.
 *
 * @example
 * ```ts ignore
 * import { LocalProvider, Sandbox } from "@sandbar/sandbar";
 * const provider = new LocalProvider({ home: "/tmp/sandboxes" });
 * await using sandbox = await Sandbox.create({ provider });
 * ```
 */
export class LocalProvider implements SandboxProvider {
  /** `local`. */
  readonly name = "local";
  /** Where sandboxes live. */
  readonly home: string;
  readonly #isolation: Isolation | undefined;
  readonly #limits: boolean;
  readonly #pool: number | undefined;

  static {
    startPooled = (provider, request, isolation, key) =>
      provider.#create(request, isolation, key).then((h) => h.info.sandboxId);
  }

  /** Make the provider (nothing is started until `create`). */
  constructor(options: LocalProviderOptions = {}) {
    this.home = options.home ?? sandbarHome();
    this.#isolation = options.isolation;
    this.#limits = options.limits ?? true;
    if (options.pool !== undefined) poolSettings(options.pool); // refused here when invalid
    this.#pool = options.pool;
  }

  /** Create a sandbox: start its supervisor and wait until its server answers. */
  async create(request: ProviderCreateRequest): Promise<SandboxHandle> {
    if (request.gpu !== undefined) {
      throw new ProviderFeatureNotSupportedError("The local provider cannot attach a GPU", {
        suggestion: "Leave out `gpu`, or use a provider that offers GPUs.",
      });
    }
    for (const option of ["pids", "volumes"] as const) {
      if (request[option] !== undefined) {
        throw new ProviderFeatureNotSupportedError(
          `The local provider cannot honour \`${option}\``,
          {
            suggestion: "Leave it out, or use the docker provider.",
          },
        );
      }
    }
    if (request.template !== "base") {
      throw new ValidationError(`The local provider has no template "${request.template}"`, {
        suggestion: 'Use the template "base" (the default); shape the sandbox with `policy`, ' +
          "`envs` and `commandsFile`.",
      });
    }
    for (const name of Object.keys(request.envs)) {
      if (RESERVED_ENV.test(name)) throw new ValidationError(`envs: ${name} is reserved`);
    }
    const isolation = chooseIsolation(request.isolation ?? this.#isolation);
    checkSizes(request, this.#limits);
    if (request.network && isolation === "none") {
      throw new ProviderFeatureNotSupportedError(
        'network rules need isolation "bwrap": without it the sandbox is on the host\'s network',
        { suggestion: "Leave out `isolation`, or `network`." },
      );
    }
    const pool = poolSettings(this.#pool);
    // A sandbox with network has its egress proxy from the start: never a pooled one.
    const key = pool.size > 0 && !request.network
      ? await poolKey(request, isolation, this.#limits)
      : null;
    if (key !== null) {
      const dir = new PoolDir(this.home, key);
      // The refill (a look at the pool, its spec written, a filler started) starts as soon as a
      // waiting sandbox is taken, beside the claim's round trip to its supervisor.
      const spec = poolSpec(request, isolation, this.#limits);
      let refill: Promise<void> | undefined;
      const refillNow = () => {
        if (!refill) {
          refill = this.#refill(dir, spec, pool.size);
          refill.catch(() => {}); // awaited below; not an unhandled rejection meanwhile
        }
        return refill;
      };
      let claimed: SandboxHandle | null;
      try {
        claimed = await this.#claim(dir, request, refillNow);
      } catch (e) {
        await refill?.catch(() => {});
        throw e;
      }
      try {
        await refillNow();
      } catch (e) {
        // A create that fails leaves nothing behind: not the sandbox it claimed either.
        if (claimed) await this.kill(claimed.info.sandboxId).catch(() => {});
        throw e;
      }
      if (claimed) return claimed;
    }
    return await this.#create(request, isolation);
  }

  /**
   * Take a sandbox out of `pool` and hand it to `request`'s caller, or null if none is ready.
   * `taken` is called once one has left the pool (the refill may start then).
   */
  async #claim(
    pool: PoolDir,
    request: ProviderCreateRequest,
    taken: () => void,
  ): Promise<SandboxHandle | null> {
    for (let id = await pool.take(); id !== null; id = await pool.take()) {
      taken();
      const dir = new SandboxDir(this.home, id);
      const state = await readState(dir);
      if (state?.pool?.key !== pool.key) continue;
      try {
        const answer = await controlCall(dir.controlSocket, {
          op: "claim",
          // Minted here, now: nothing before this claim knew them.
          serverToken: newSandboxToken(),
          accessToken: newSandboxToken(),
          gatewayToken: newSandboxToken(),
          envs: request.envs,
          metadata: request.metadata,
          seconds: request.timeout,
        }, 15_000);
        if (!answer.ok) throw new Error(answer.error);
      } catch {
        await this.kill(id).catch(() => {});
        continue;
      }
      // The supervisor saved the claimed state before it answered, and answered: it lives. Its
      // state is the handle (`connect` would read it twice and ping the supervisor twice more).
      const claimed = await readState(dir);
      return claimed?.ports && !claimed.pool ? handleOf(claimed) : await this.connect(id);
    }
    return null;
  }

  /** Start a filler when `pool` holds fewer than `size` and none is filling it. */
  async #refill(pool: PoolDir, spec: ReturnType<typeof poolSpec>, size: number): Promise<void> {
    if ((await pool.ids()).length >= size || (await pool.filling())) return;
    await pool.writeSpec(spec);
    spawnFiller(this.home, pool.key, size);
  }

  async #create(
    request: ProviderCreateRequest,
    isolation: Isolation,
    pooled?: string,
  ): Promise<SandboxHandle> {
    const id = newSandboxId();
    const dir = new SandboxDir(this.home, id);
    if (dir.channelSocket.length > 107) {
      throw new ValidationError(`The sandbox directory path is too long for a Unix socket`, {
        suggestion: "Set SANDBAR_HOME (or the provider's `home`) to a shorter directory.",
      });
    }
    await Deno.mkdir(join(this.home, "sandboxes"), { recursive: true, mode: 0o700 });
    await Deno.mkdir(dir.path, { mode: 0o700 });
    let handle;
    try {
      handle = await this.#start(request, dir, id, isolation, pooled);
    } catch (e) {
      await removeSandboxFiles(dir).catch(() => {});
      throw e;
    }
    if (isolation === "none") warnNoIsolation(id);
    return handle;
  }

  async #start(
    request: ProviderCreateRequest,
    dir: SandboxDir,
    id: string,
    isolation: Isolation,
    pooled?: string,
  ): Promise<SandboxHandle> {
    const sizes = sizesFor(request, id, this.#limits);
    await prepareDisk(dir, sizes.disk, join(this.home, "disk-templates"));
    await Deno.mkdir(dir.channel, { mode: 0o700 });
    const serverToken = newSandboxToken();
    const commandsFile = request.commandsFile
      ? await Deno.realPath(request.commandsFile).catch(() => {
        throw new ValidationError(`commandsFile ${request.commandsFile} does not exist`);
      })
      : undefined;
    const accessToken = newSandboxToken();
    const policy = policyFor(request, isolation, isolation === "bwrap" ? "/home/user" : dir.root);
    if (request.policy !== undefined) await validatePolicy(policy);
    await Deno.mkdir(join(dir.run, "state"), { mode: 0o700 });
    const source = packageSource();
    await cacheSandboxModules(source, denoDir());
    const moduleCache = await warmModuleCache(source, denoDir(), this.home) ?? undefined;
    // Each secret's variable holds a placeholder inside; the value stays in the supervisor.
    const network = withPlaceholders(request.network);
    const envs = placeholderEnvs(request.envs, network, RESERVED_ENV);
    const plan = launchPlan({
      source,
      denoDir: denoDir(),
      moduleCache,
      policy,
      isolation,
      sandboxDir: dir.path,
      rootDir: dir.root,
      runDir: dir.run,
      tmpDir: dir.tmp,
      memory: sizes.memory,
      cgroup: sizes.cgroup,
      channelDir: dir.channel,
      envs,
      serverToken,
      access: { env: ACCESS_TOKEN_ENV, token: accessToken },
      commandsFile,
      awaitClaim: pooled !== undefined,
      egress: request.network !== undefined,
      egressCaDir: network?.secrets?.length ? join(dir.path, EGRESS_CA_DIR) : undefined,
    });
    for (const [name, value] of Object.entries(plan.secrets)) {
      await writeAtomic(join(dir.run, name), `${value}\n`, 0o600);
    }
    await writeAtomic(join(dir.run, "policy.json"), JSON.stringify(policy, null, 2), 0o600);
    const now = Date.now();
    const startTimeout = request.requestTimeout ?? DEFAULT_START_TIMEOUT;
    const state: LocalState = {
      version: 1,
      id,
      template: request.template,
      status: "creating",
      createdAt: new Date(now).toISOString(),
      endAt: new Date(now + request.timeout * 1000).toISOString(),
      metadata: request.metadata,
      resources: { cpu: sizes.cpu, memory: sizes.memory, disk: sizes.disk },
      pids: sizes.pids,
      cgroup: sizes.cgroup,
      secure: request.secure,
      serverToken,
      accessToken,
      gatewayToken: newSandboxToken(),
      isolation,
      home: plan.home,
      startTimeout,
      launch: { argv: plan.argv, env: plan.env },
      ...(pooled !== undefined ? { pool: { key: pooled } } : {}),
      ...(network ? { network } : {}),
    };
    await writeState(dir, state);
    const signal = await startSupervision(this.home, source, dir, state);
    if (signal.event !== "ready") {
      throw new SandboxError(`The local sandbox did not start: ${signal.message}`, {
        suggestion: "Read the message: it ends with what the server printed.",
      });
    }
    if (pooled !== undefined) return handleOf(await this.#waitPorts(id, true));
    // The supervisor saved its running state before it said ready, and said it: it lives. That
    // state is the handle (`connect` would read it twice more and ping the supervisor).
    const saved = await readState(dir);
    return saved?.ports && saved.status === "running" ? handleOf(saved) : this.connect(id);
  }

  /**
   * A live sandbox's directory and state. One waiting in the pool is not found, unless
   * `pooled` (its filler, `kill`).
   */
  async #live(id: string, pooled = false): Promise<{ dir: SandboxDir; state: LocalState }> {
    if (!/^[a-z0-9]+$/.test(id)) throw new SandboxNotFoundError(`Sandbox ${id} not found`);
    const dir = new SandboxDir(this.home, id);
    const state = await readState(dir);
    if (state && (pooled || !state.pool) && (await this.#alive(dir, state))) return { dir, state };
    throw new SandboxNotFoundError(`Sandbox ${id} not found (killed, or its timeout ran out)`);
  }

  /**
   * Whether a recorded sandbox still lives: its supervisor answers on the control socket (one
   * that is there but slow to answer counts as alive). A dead one's leftovers are removed.
   */
  async #alive(dir: SandboxDir, state: LocalState): Promise<boolean> {
    if (state.dormant) return true; // paused, its files kept, no process
    if (!state.supervisor) {
      // Still starting: its supervisor has not recorded itself yet.
      const age = Date.now() - Date.parse(state.wokenAt ?? state.createdAt);
      if (age < (state.startTimeout + 10) * 1000) return true;
    } else {
      try {
        await controlCall(dir.controlSocket, { op: "ping" }, 2000);
        return true;
      } catch (e) {
        if (e instanceof ControlUnavailable && e.timedOut) return true;
      }
    }
    // The supervisor is gone; bubblewrap's --die-with-parent took the sandbox with it (and what
    // left its tree is still in its cgroup; frozen, when it was paused). A host that lives on
    // without this sandbox's supervision hosts others: only the sandbox's own tree is ended.
    if (!state.hosted) killTree(state.supervisor);
    killTree(state.sandbox);
    if (state.cgroup) {
      await killAll(state.cgroup).catch(() => {});
      removeCgroup(state.cgroup);
    }
    if (state.status === "paused" && !state.pool) {
      // A paused sandbox's files outlive its supervisor (and the host): kept, shown as paused.
      await unmount(dir.disk).catch(() => {});
      const kept: LocalState = { ...state, dormant: true, previousPorts: state.ports };
      for (const key of ["supervisor", "sandbox", "ports", "upstream", "capabilities"] as const) {
        delete kept[key];
      }
      await writeState(dir, kept);
      Object.assign(state, kept);
      for (const key of ["supervisor", "sandbox", "ports", "upstream"] as const) delete state[key];
      return true;
    }
    await removeSandboxFiles(dir).catch(() => {});
    return false;
  }

  /**
   * Start a dormant sandbox again: a new supervisor and a fresh server on its files (its disk
   * mounted again, the server's tokens where its launch reads them). Its processes did not
   * survive; its lifetime resumes with what was left at the pause.
   */
  async #wake(dir: SandboxDir, state: LocalState): Promise<void> {
    if (state.resources.disk !== null) await mountImage(dir.image, dir.disk);
    if (state.isolation === "bwrap") {
      await writeAtomic(join(dir.run, "server_token"), `${state.serverToken}\n`, 0o600);
      await writeAtomic(join(dir.run, "access_token"), `${state.accessToken}\n`, 0o600);
    }
    const cgroup = state.cgroup && renewedCgroup(state.cgroup);
    // bubblewrap binds the cgroup read-only by its path: the launch names the new one.
    const moved = new Map(
      Object.entries(state.cgroup?.dirs ?? {}).map(([c, from]) => [from, cgroup!.dirs[c]]),
    );
    const launch = { ...state.launch, argv: state.launch.argv.map((a) => moved.get(a) ?? a) };
    await writeState(dir, { ...state, cgroup, launch, wokenAt: new Date().toISOString() });
    const signal = await startSupervision(this.home, packageSource(), dir, state);
    if (signal.event !== "ready") {
      throw new SandboxError(`Sandbox ${state.id} did not start again: ${signal.message}`);
    }
  }

  /** The sandbox, woken first when it is dormant. */
  async #awake(sandboxId: string): Promise<void> {
    const { dir, state } = await this.#live(sandboxId);
    if (state.dormant) await this.#wake(dir, state);
  }

  /** The sandbox's info and addresses. */
  async connect(sandboxId: string): Promise<SandboxHandle> {
    await this.#awake(sandboxId);
    return handleOf(await this.#waitPorts(sandboxId));
  }

  async #waitPorts(sandboxId: string, pooled = false): Promise<LocalState> {
    let { state } = await this.#live(sandboxId, pooled);
    const deadline = Date.now() + (state.startTimeout + 5) * 1000;
    while (!state.ports) {
      if (Date.now() > deadline) throw new TimeoutError(`Sandbox ${sandboxId} is still starting`);
      await new Promise((r) => setTimeout(r, 50));
      ({ state } = await this.#live(sandboxId, pooled));
    }
    return state;
  }

  /** The sandbox's info now. */
  async getInfo(sandboxId: string): Promise<SandboxInfo> {
    const { state } = await this.#live(sandboxId);
    return infoOf(state, true);
  }

  /** Live sandboxes of this home, oldest first; access tokens are left out. */
  async list(query: ProviderListQuery): Promise<SandboxInfo[]> {
    const found: LocalState[] = [];
    for (const id of await sandboxIds(this.home)) {
      const dir = new SandboxDir(this.home, id);
      const state = await readState(dir);
      if (!state || state.pool || !(await this.#alive(dir, state))) continue;
      if (query.status && state.status !== query.status) continue;
      found.push(state);
    }
    found.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    return found.slice(query.offset, query.offset + query.limit).map((s) => infoOf(s, false));
  }

  async #control(sandboxId: string, request: ControlRequest) {
    const { dir, state } = await this.#live(sandboxId);
    if (state.dormant) {
      throw new SandboxError(
        `Sandbox ${sandboxId} is paused with no process left (its supervisor ended); its files ` +
          "are kept",
        { suggestion: "Call resume() (or connect()) to start a fresh server on its files." },
      );
    }
    let answer;
    try {
      answer = await controlCall(dir.controlSocket, request);
    } catch (e) {
      if (!(e instanceof ControlUnavailable)) throw e;
      await this.#live(sandboxId); // throws SandboxNotFoundError when it has just gone
      throw new SandboxError(`Sandbox ${sandboxId} did not answer: ${e.message}`);
    }
    if (!answer.ok) throw new SandboxError(`Sandbox ${sandboxId}: ${answer.error}`);
    return answer;
  }

  /** Destroy a sandbox: every process and every file of it. False when there was none. */
  async kill(sandboxId: string): Promise<boolean> {
    let live;
    try {
      live = await this.#live(sandboxId, true);
    } catch (e) {
      if (e instanceof SandboxNotFoundError) return false;
      throw e;
    }
    const { dir, state } = live;
    if (state.dormant) {
      await removeSandboxFiles(dir);
      return true;
    }
    try {
      await controlCall(dir.controlSocket, { op: "kill" }, 30_000);
    } catch (e) {
      if (!(e instanceof ControlUnavailable)) throw e;
    }
    // Whatever the supervisor did, make sure: nothing of the sandbox runs, nothing is left. (A
    // host answers `kill` once the sandbox's supervision has ended, and goes on for others.)
    if (!state.hosted) await supervisorGone(state.supervisor);
    killTree(state.sandbox);
    if (!state.hosted) killTree(state.supervisor);
    if (state.cgroup) {
      await killAll(state.cgroup).catch(() => {});
      removeCgroup(state.cgroup);
    }
    await removeSandboxFiles(dir);
    return true;
  }

  /** Its use of its sizes now, from its cgroup and its disk. */
  async getMetrics(sandboxId: string): Promise<SandboxMetrics> {
    const { metrics: m } = await this.#control(sandboxId, { op: "metrics" }) as {
      metrics?: LocalMetrics;
    };
    if (!m) throw new SandboxError(`Sandbox ${sandboxId} did not report metrics`);
    return {
      timestamp: new Date(),
      cpuCount: m.cpuLimit,
      cpuUsedPct: m.cpuPct,
      cpuUsedSeconds: m.cpuSeconds,
      memUsed: m.memoryBytes,
      memTotal: m.memoryLimitBytes,
      diskUsed: m.diskBytes,
      diskTotal: m.diskLimitBytes,
      processes: m.pids,
      processLimit: m.pidsLimit,
      oomKills: m.oomKills,
    };
  }

  /** What happened to it (OOM kills), oldest first. */
  async getEvents(sandboxId: string): Promise<SandboxEvent[]> {
    await this.#control(sandboxId, { op: "ping" }); // the supervisor looks at the cgroup now
    const { state } = await this.#live(sandboxId);
    return (state.events ?? []).map((e) => ({
      type: e.type,
      at: new Date(e.at),
      message: e.message,
    }));
  }

  /**
   * Empty the warm pool of this home: stop its fillers, then kill every sandbox waiting in it.
   * (Turning the pool off, `pool: 0` or `SANDBAR_POOL=0`, stops new ones; those waiting end at
   * their idle time unless drained.) Returns how many sandboxes it killed.
   */
  async drainPool(): Promise<number> {
    const pools = await PoolDir.all(this.home);
    await Promise.all(pools.map((p) => p.stopFiller()));
    let killed = 0;
    for (const id of await sandboxIds(this.home)) {
      const state = await readState(new SandboxDir(this.home, id));
      if (state?.pool && (await this.kill(id))) killed++;
    }
    for (const p of pools) await p.remove();
    return killed;
  }

  /** Make the lifetime end `timeout` seconds from now. */
  async setTimeout(sandboxId: string, timeout: number): Promise<void> {
    const { dir, state } = await this.#live(sandboxId);
    if (state.dormant) {
      const endAt = new Date(Date.now() + timeout * 1000).toISOString();
      await writeState(dir, { ...state, endAt, pausedRemainingMs: timeout * 1000 });
      return;
    }
    await this.#control(sandboxId, { op: "set_timeout", seconds: timeout });
  }

  /**
   * Freeze every process of the sandbox (its cgroup; SIGSTOP without one). The lifetime stops
   * running down until `resume`.
   */
  async pause(sandboxId: string): Promise<void> {
    const { state } = await this.#live(sandboxId);
    if (state.dormant) return; // paused already
    await this.#control(sandboxId, { op: "pause" });
  }

  /**
   * Continue a paused sandbox (thaw its cgroup), or start a fresh server on a dormant one's files
   * (one whose supervisor ended while it was paused).
   */
  async resume(sandboxId: string): Promise<void> {
    const { dir, state } = await this.#live(sandboxId);
    if (state.dormant) return await this.#wake(dir, state);
    await this.#control(sandboxId, { op: "resume" });
  }

  /** New network rules for a sandbox created with `network`; how many connections closed. */
  async updateNetwork(sandboxId: string, network: NetworkConfig | false): Promise<number> {
    const answer = await this.#control(sandboxId, { op: "network_update", network });
    return answer.closed ?? 0;
  }

  /** The sandbox's last `limit` egress audit lines. */
  async networkAudit(sandboxId: string, limit: number): Promise<AuditEntry[]> {
    const answer = await this.#control(sandboxId, { op: "network_audit", limit });
    return answer.audit ?? [];
  }
}

/** Sizes asked for must be enforceable here: else E8004 with the reason, as for `gpu`. */
function checkSizes(request: ProviderCreateRequest, limits: boolean): void {
  const cores = navigator.hardwareConcurrency;
  if (request.cpu !== undefined && request.cpu > cores) {
    throw new ValidationError(
      `cpu must be at most ${cores} (this host's CPUs), got ${request.cpu}`,
      { suggestion: `Ask for ${cores} or fewer; a quota past the host's CPUs is never reached.` },
    );
  }
  if (request.memory !== undefined && request.memory < MIN_MEMORY) {
    throw new ValidationError(
      `memory must be at least ${MIN_MEMORY} MiB (the sandbox's own server needs about 80)`,
    );
  }
  if (request.disk !== undefined && request.disk < MIN_DISK) {
    throw new ValidationError(`disk must be at least ${MIN_DISK} MiB (ext4's own share)`);
  }
  const asked = (["cpu", "memory"] as const).filter((k) => request[k] !== undefined);
  const cgroups = limits ? cgroupSupport() : OFF;
  if (asked.length && !cgroups.ok) {
    throw new ProviderFeatureNotSupportedError(
      `The local provider cannot enforce ${asked.join(" and ")} on this host: ${cgroups.reason}`,
      { suggestion: `Leave out ${asked.join(" and ")}, or run where cgroups are writable.` },
    );
  }
  const disk = limits ? diskSupport() : OFF;
  if (request.disk !== undefined && !disk.ok) {
    throw new ProviderFeatureNotSupportedError(
      `The local provider cannot cap disk on this host: ${disk.reason}`,
      { suggestion: "Leave out `disk`, or run as root where loop devices are available." },
    );
  }
}

const OFF = { ok: false, reason: "the provider was made with `limits: false`" } as const;
const MIN_MEMORY = 128;
const MIN_DISK = 16;

/** The sizes in force (asked, else the defaults) and the cgroup, where the host has them. */
function sizesFor(request: ProviderCreateRequest, id: string, limits: boolean) {
  const cgroups = limits ? cgroupSupport() : OFF;
  const disk = limits && diskSupport().ok ? request.disk ?? DEFAULT_SIZES.disk : null;
  if (!cgroups.ok) return { cpu: null, memory: null, pids: null, disk, cgroup: undefined };
  return {
    cpu: request.cpu ?? Math.min(DEFAULT_SIZES.cpu, navigator.hardwareConcurrency),
    memory: request.memory ?? DEFAULT_SIZES.memory,
    pids: DEFAULT_SIZES.pids,
    disk,
    cgroup: cgroupRef(cgroups, id),
  };
}

/**
 * The isolation a sandbox gets: the one asked for, else `SANDBAR_ISOLATION`, else `bwrap`;
 * `bwrap` without bubblewrap installed is an error that says how to install it or opt out.
 */
function chooseIsolation(asked: Isolation | undefined): Isolation {
  const env = Deno.env.get("SANDBAR_ISOLATION");
  if (asked === undefined && env !== undefined && env !== "") {
    if (env !== "bwrap" && env !== "none") {
      throw new ValidationError(`SANDBAR_ISOLATION must be bwrap or none, got ${env}`);
    }
  }
  const isolation = asked ?? ((env || "bwrap") as Isolation);
  if (isolation === "bwrap" && !findBwrap()) {
    throw new ProviderFeatureNotSupportedError(NO_BWRAP, {
      suggestion: 'apt-get install bubblewrap, or isolation: "none" to run without isolation',
    });
  }
  return isolation;
}

/** The error without bubblewrap (`docs/sdk/sandbox.md`, Prerequisites). */
export const NO_BWRAP = "The local provider isolates sandboxes with bubblewrap, and `bwrap` is " +
  "not on PATH. Install it (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install " +
  'bubblewrap`), or opt out with `Sandbox.create({ isolation: "none" })` (or ' +
  "SANDBAR_ISOLATION=none): Deno permissions only, not a boundary for hostile code.";

let warnedNoIsolation = false;

/** Say once per process, on stderr, that a sandbox runs without isolation. */
function warnNoIsolation(id: string): void {
  if (warnedNoIsolation) return;
  warnedNoIsolation = true;
  console.error(
    `sandbar: warning: local sandbox ${id} runs with isolation "none": its processes are host ` +
      "processes under Deno permissions and the server's guards, with no namespaces; not a " +
      "boundary for hostile code. (Said once per process.)",
  );
}

/**
 * Start the supervision of the sandbox in `dir`, whose first state is written: in the home's
 * host with bubblewrap (`host.ts`), else in a supervisor process of its own (its process tree is
 * the supervisor's). The supervisor's one line.
 */
function startSupervision(
  home: string,
  source: PackageSource,
  dir: SandboxDir,
  state: LocalState,
): Promise<ReadySignal> {
  const timeoutMs = (state.startTimeout + 5) * 1000;
  if (state.isolation === "bwrap") return superviseInHost(home, source, dir.path, timeoutMs);
  const supervisor = spawnSupervisor(
    source.module("sdk/providers/local/supervisor.ts"),
    source.runFlags,
    [dir.path],
  );
  return readySignal(supervisor, timeoutMs);
}

/** Wait (up to 5 s) until the supervisor process has exited, where /proc tells. */
async function supervisorGone(ref: LocalState["supervisor"]): Promise<void> {
  if (!ref || !procReadable()) return await new Promise((r) => setTimeout(r, 100));
  const until = Date.now() + 5000;
  while (isAlive(ref) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

function infoOf(state: LocalState, withToken: boolean): SandboxInfo {
  return {
    sandboxId: state.id,
    template: state.template,
    status: state.status,
    envdUrl: state.ports ? `http://127.0.0.1:${state.ports.http}` : null,
    envdAccessToken: withToken ? state.accessToken : null,
    metadata: state.metadata,
    startedAt: new Date(state.createdAt),
    endAt: new Date(state.endAt),
    provider: "local",
    cpuCount: state.resources.cpu,
    memoryMB: state.resources.memory,
    diskMB: state.resources.disk,
    isolation: state.isolation,
    oomKills: state.events?.filter((e) => e.type === "oom_kill").at(-1)?.count ?? 0,
  };
}

function handleOf(state: LocalState): SandboxHandle {
  const ports = state.ports!;
  const portAddress = (port: number, ws = false): PortAddress => {
    const listener = ws ? ports.pty : ports.http;
    const prefix = port === (ws ? 9001 : 9000) ? "" : `/_port/${port}`;
    // The SDK's server clients pass the gateway with its own token, never the access token
    // (which the gateway would hand to the sandbox's server as an identity).
    const headers: Record<string, string> = {};
    if (state.secure && state.gatewayToken) headers["X-Sandbar-Gateway"] = state.gatewayToken;
    else if (state.secure) headers["X-Access-Token"] = state.accessToken;
    return { url: `${ws ? "ws" : "http"}://127.0.0.1:${listener}${prefix}`, headers };
  };
  return {
    info: infoOf(state, true),
    secure: state.secure,
    domain: `localhost:${ports.http}`,
    scheme: "http",
    capabilities: state.capabilities ?? [],
    serverToken: state.serverToken,
    portAddress,
    serverCommand: [
      state.isolation === "bwrap" ? INSIDE_DENO : Deno.execPath(),
      "run",
      "-A",
      ...packageSource().runFlags,
      packageSource().module("server/main.ts"),
    ],
  };
}

/**
 * Fill the pool `key` under `home` up to `size` ready sandboxes, as its only filler (the
 * detached `pool_fill.ts` runs this); removes the pools of the same options made by another
 * package first. Returns how many it started; 0 when another process is filling.
 */
export async function fillPool(
  home: string,
  key: string,
  size: number,
  signal?: AbortSignal,
  delayMs = 0,
): Promise<number> {
  const pool = new PoolDir(home, key);
  let started = 0;
  // Looked at again once the lock is let go: a create that took a sandbox while this filler was
  // ending saw the lock held and left the refill to it (else the pool stayed short until the
  // next create). A drained pool (its spec gone) or a stop ends it.
  for (let first = true; first || !signal?.aborted; first = false) {
    if (!first) {
      const drained = !(await Deno.stat(join(pool.path, "spec.json")).catch(() => null));
      if (drained || (await pool.ids()).length >= size) break;
    }
    if (!(await pool.lock())) break;
    try {
      started += await fillLocked(pool, home, key, size, signal, first ? delayMs : 0);
    } finally {
      await pool.unlock();
    }
  }
  return started;
}

/** {@linkcode fillPool} holding the pool's lock: how many sandboxes it started. */
async function fillLocked(
  pool: PoolDir,
  home: string,
  key: string,
  size: number,
  signal: AbortSignal | undefined,
  delayMs: number,
): Promise<number> {
  let started = 0;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, delayMs);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
  const killer = new LocalProvider({ home, pool: 0 });
  for (const stale of await pool.stalePeers()) {
    for (const id of await stale.ids()) await killer.kill(id).catch(() => false);
    await stale.remove();
  }
  const spec = await pool.readSpec();
  const provider = new LocalProvider({ home, pool: 0, limits: spec.limits ?? true });
  const idle = poolSettings(0).idle;
  for (;;) {
    const ids = await pool.ids();
    const waiting = [];
    for (const id of ids) {
      if (await readState(new SandboxDir(home, id))) waiting.push(id);
      else await Deno.remove(join(pool.path, id)).catch(() => {}); // ended while waiting
    }
    if (waiting.length >= size || signal?.aborted) break;
    const request = { ...spec.request, timeout: idle };
    const id = await startPooled(provider, request, spec.isolation, key);
    if (signal?.aborted) {
      await provider.kill(id);
      break;
    }
    try {
      await pool.add(id);
    } catch (e) {
      await provider.kill(id); // the pool was drained meanwhile: nobody could claim it
      throw e;
    }
    started++;
  }
  return started;
}
