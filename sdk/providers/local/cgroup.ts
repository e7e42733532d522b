/**
 * A local sandbox's cgroup: the kernel's enforcement of its sizes (CPU quota, memory with swap,
 * process count), its pause (the freezer) and a kill no process can escape (every member, not a
 * tree that a `setsid` or a double fork leaves).
 *
 * Both hierarchies are handled:
 *
 * - **cgroup v1** (one mount per controller, as on this project's CI host): a directory
 *   `sandbar/<id>` under this process's own cgroup in each of the `cpu`, `cpuacct`, `memory`,
 *   `pids` and `freezer` hierarchies; `cpu.cfs_quota_us`, `memory.limit_in_bytes` and
 *   `memory.memsw.limit_in_bytes` (memory plus swap, where the kernel accounts swap), `pids.max`,
 *   `freezer.state`.
 * - **cgroup v2** (one unified mount at `/sys/fs/cgroup`): a directory `sandbar/<id>` beside this
 *   process's own cgroup (a cgroup with processes cannot enable controllers for its children),
 *   which works as root and for a user with a delegated subtree (systemd's `user@.service`);
 *   `cpu.max`, `memory.max` with `memory.swap.max = 0`, `pids.max`, `cgroup.freeze`,
 *   `cgroup.kill`. `SANDBAR_CGROUP` names another parent directory.
 *
 * Where no hierarchy is writable, {@linkcode cgroupSupport} says why, and a sandbox that asks for
 * a size is refused with that reason (as `gpu` is): never a limit recorded but not enforced.
 *
 * The sandbox's first process enters its cgroup itself before it `exec`s bubblewrap
 * ({@linkcode enterArgv}), so nothing of the sandbox ever runs outside it.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { type CgroupMount, cgroupMounts, ownCgroupPaths } from "../../../shared/cgroup_paths.ts";
import { entryDirs, workDescriptorFiles, workDirs, workLimits } from "./cgroup_reserve.ts";

/** Sizes in force; null where none is. */
export interface Limits {
  /** CPU cores (a quota: `cpu` × 100 ms of CPU time per 100 ms). */
  cpu: number | null;
  /** Memory in MiB, swap included. */
  memory: number | null;
  /** Processes and threads. */
  pids: number | null;
}

/** Where a sandbox's cgroup is: the hierarchy's version and its directories. */
export interface CgroupRef {
  /** 1 or 2. */
  version: 1 | 2;
  /** v1: controller → directory; v2: `unified` → the directory. */
  dirs: Record<string, string>;
}

/** What the kernel counted for a cgroup. */
export interface CgroupStats {
  /** CPU time used, in microseconds. */
  cpuUsageUs: number | null;
  /** Memory in use, in bytes (v1: memory plus swap where accounted). */
  memoryBytes: number | null;
  /** Memory limit in bytes, or null when none. */
  memoryLimitBytes: number | null;
  /** Processes killed by the kernel for want of memory, since the cgroup was made. */
  oomKills: number;
  /** Processes and threads in it now. */
  pids: number | null;
  /** The process limit, or null when none. */
  pidsLimit: number | null;
  /** The CPU quota in cores, or null when none. */
  cpuLimit: number | null;
}

/** Whether this host can give sandboxes cgroups, and where. */
export type CgroupSupport =
  | { ok: true; version: 1; parents: Record<string, string> }
  | { ok: true; version: 2; parent: string }
  | { ok: false; reason: string };

const V1_CONTROLLERS = ["cpu", "cpuacct", "memory", "pids", "freezer"] as const;
const V2_CONTROLLERS = ["cpu", "memory", "pids"];
const PERIOD_US = 100_000;
const UNLIMITED_V1 = 9_223_372_036_854_771_712;

function read(path: string): string | null {
  try {
    return Deno.readTextFileSync(path).trim();
  } catch {
    return null;
  }
}

function write(path: string, value: string): void {
  Deno.writeTextFileSync(path, value);
}

/**
 * Whether this user can make cgroups in `dir`, tried with a child of its own name, made and
 * removed. Not with the shared `sandbar` child: another process probing at the same moment, or
 * removing `sandbar` with its last sandbox, could remove it between this one's make and look
 * (test files running in parallel once all found "not writable" that way).
 */
function writable(dir: string): boolean {
  const probe = join(dir, `sandbar-probe-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`);
  try {
    Deno.mkdirSync(probe);
  } catch {
    return false;
  }
  try {
    return Deno.statSync(join(probe, "cgroup.procs")).isFile;
  } catch {
    return false;
  } finally {
    try {
      Deno.removeSync(probe);
    } catch { /* a cgroup with no process is always removable; nothing to do otherwise */ }
  }
}

/** Cgroup hierarchies, from `/proc/self/mountinfo`: v1 by controller, and the v2 one. */
function mounts(): { v1: Map<string, CgroupMount>; v2: CgroupMount | null } {
  const v1 = new Map<string, CgroupMount>();
  let v2: CgroupMount | null = null;
  for (const mount of cgroupMounts(read("/proc/self/mountinfo") ?? "")) {
    if (mount.type === "cgroup2") {
      if (v2 === null || mount.point === "/sys/fs/cgroup") v2 = mount;
      continue;
    }
    for (const c of V1_CONTROLLERS) if (mount.options.includes(c)) v1.set(c, mount);
  }
  return { v1, v2 };
}

/**
 * Where this process's cgroup `path` shows in `mount`, then the mount point itself: `path` is
 * seen from the kernel's root, while a container may mount only its own subtree (the mount's
 * root), or sit in a cgroup namespace where `path` names nothing under the mount.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupCandidates } from "./cgroup.ts";
 * const memory = { point: "/sys/fs/cgroup/memory", root: "/" };
 * assert.deepEqual(cgroupCandidates(memory, "/ci/job"), [
 *   "/sys/fs/cgroup/memory/ci/job",
 *   "/sys/fs/cgroup/memory",
 * ]);
 * // A container that mounted only its own subtree: the path is found below the mount's root.
 * const scoped = { point: "/sys/fs/cgroup/memory", root: "/docker/c1" };
 * assert.deepEqual(cgroupCandidates(scoped, "/docker/c1/job")[0], "/sys/fs/cgroup/memory/job");
 * // A path outside the mount (another cgroup namespace): only the mount point.
 * assert.deepEqual(cgroupCandidates(scoped, "/elsewhere"), ["/sys/fs/cgroup/memory"]);
 * ```
 */
export function cgroupCandidates(
  mount: Pick<CgroupMount, "point" | "root">,
  path: string | undefined,
): string[] {
  const root = mount.root === "/" ? "" : mount.root;
  const own = path !== undefined && (path === root || path.startsWith(`${root}/`))
    ? join(mount.point, path.slice(root.length) || "/")
    : null;
  return own && own !== mount.point ? [own, mount.point] : [mount.point];
}

let detected: CgroupSupport | undefined;

/**
 * Whether sandboxes can have cgroups on this host (read once per process): a v1 hierarchy of
 * each needed controller, or a v2 one with `cpu`, `memory` and `pids`, that this user can write.
 * Each is tried under this process's own cgroup, then at its mount point; when neither works the
 * reason names each directory tried.
 *
 * @example
 * ```ts ignore
 * const support = cgroupSupport();
 * if (!support.ok) console.log(`sizes cannot be enforced: ${support.reason}`);
 * ```
 */
export function cgroupSupport(): CgroupSupport {
  return detected ??= detect();
}

function detect(): CgroupSupport {
  if (Deno.build.os !== "linux") return { ok: false, reason: "cgroups are a Linux feature" };
  try {
    Deno.readTextFileSync("/proc/self/cgroup");
  } catch (e) {
    return { ok: false, reason: `cannot read /proc (Deno needs -A): ${(e as Error).message}` };
  }
  const { v1, v2 } = mounts();
  const own = ownCgroupPaths(read("/proc/self/cgroup") ?? "");
  const explicit = Deno.env.get("SANDBAR_CGROUP");
  if (explicit) return v2Parent(explicit);
  const reasons: string[] = [];
  if (v1.size > 0) {
    const found = v1Parents(v1, own);
    if (found.ok) return found;
    reasons.push(found.reason);
  }
  if (v2 !== null) {
    for (const dir of cgroupCandidates(v2, own.get(""))) {
      // A cgroup with processes cannot give its children controllers: use its parent.
      const found = v2Parent(dir === v2.point ? dir : join(dir, ".."));
      if (found.ok) return found;
      reasons.push(found.reason);
    }
  }
  if (!reasons.length) return { ok: false, reason: "no cgroup hierarchy is mounted" };
  return { ok: false, reason: [...new Set(reasons)].join("; ") };
}

function v1Parents(v1: Map<string, CgroupMount>, own: Map<string, string>): CgroupSupport {
  const missing = V1_CONTROLLERS.filter((c) => !v1.has(c));
  if (missing.length) {
    return { ok: false, reason: `the cgroup v1 controllers ${missing.join(", ")} are not mounted` };
  }
  const parents: Record<string, string> = {};
  for (const c of V1_CONTROLLERS) {
    const tried = cgroupCandidates(v1.get(c)!, own.get(c));
    const dir = tried.find(writable);
    if (dir === undefined) {
      return {
        ok: false,
        reason: `cgroup v1 ${c} hierarchy not writable by this user (tried ${tried.join(", ")}); ` +
          "run as root",
      };
    }
    parents[c] = join(dir, "sandbar");
  }
  return { ok: true, version: 1, parents };
}

function v2Parent(dir: string): CgroupSupport {
  if (read(join(dir, "cgroup.controllers")) === null) {
    return { ok: false, reason: `${dir} is not a cgroup v2 directory` };
  }
  if (!writable(dir)) {
    return {
      ok: false,
      reason: `cgroup v2 directory ${dir} not writable by this user; run as root or ` +
        "delegate a subtree (systemd Delegate=yes) and name it in SANDBAR_CGROUP",
    };
  }
  const wanted = V2_CONTROLLERS.map((c) => `+${c}`).join(" ");
  try {
    write(join(dir, "cgroup.subtree_control"), wanted);
  } catch { /* already on, or not ours to switch on: the check below tells */ }
  // What `dir` hands its children, so what its `sandbar` child (made with the first sandbox) has.
  const handed = (read(join(dir, "cgroup.subtree_control")) ?? "").split(" ");
  const missing = V2_CONTROLLERS.filter((c) => !handed.includes(c));
  if (missing.length) {
    return {
      ok: false,
      reason: `the cgroup v2 controllers ${missing.join(", ")} are not delegated to ${dir}`,
    };
  }
  const parent = join(dir, "sandbar");
  return { ok: true, version: 2, parent };
}

/**
 * The CPU weight of a group. A cgroup competes with its siblings as one entity of this weight
 * (1024 in v1, 100 in v2, by default: one busy task's worth). Left at the default, all sandboxes
 * together would weigh like one host task, and on a busy host a sandbox's start took 45% longer
 * than the same start outside any cgroup (measured with ~40 runnable host tasks); so the
 * `sandbar` parent weighs like the host's CPU count of tasks, and each sandbox like its quota.
 */
function weigh(file: string, value: number): void {
  try {
    write(file, `${value}`);
  } catch { /* a delegated subtree may not allow it: the default weight then */ }
}

/** Where sandbox `id`'s cgroup is (nothing is made yet). */
export function cgroupRef(support: CgroupSupport, id: string): CgroupRef {
  if (!support.ok) throw new Error(support.reason);
  return support.version === 1
    ? {
      version: 1,
      dirs: Object.fromEntries(
        Object.entries(support.parents).map(([c, parent]) => [c, join(parent, id)]),
      ),
    }
    : { version: 2, dirs: { unified: join(support.parent, id) } };
}

/**
 * The cgroup for a sandbox's next start (a dormant sandbox woken): beside the last one, under a
 * new name (`<id>.<n>`). Never the same directory again: the last start's pause watcher may
 * still be about to kill whatever it finds there, and would kill the new start's processes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renewedCgroup } from "./cgroup.ts";
 * const first = { version: 2 as const, dirs: { unified: "/sys/fs/cgroup/sandbar/abc" } };
 * const second = renewedCgroup(first);
 * assert.equal(second.dirs.unified, "/sys/fs/cgroup/sandbar/abc.1");
 * assert.equal(renewedCgroup(second).dirs.unified, "/sys/fs/cgroup/sandbar/abc.2");
 * ```
 */
export function renewedCgroup(ref: CgroupRef): CgroupRef {
  const renamed = (dir: string) => {
    const [id, n] = basename(dir).split(".");
    return join(dirname(dir), `${id}.${Number(n ?? 0) + 1}`);
  };
  return {
    version: ref.version,
    dirs: Object.fromEntries(Object.entries(ref.dirs).map(([c, dir]) => [c, renamed(dir)])),
  };
}

/**
 * Make the cgroup and set its limits; then, inside it, the `work` cgroup the server's children go
 * to, with the limits less the server's reserve (see `cgroup_reserve.ts`). Throws when the kernel
 * refuses a limit (the half-made cgroup is removed). The reserve is a protection of the server,
 * not a size asked for: where the kernel refuses it, the sandbox runs without it (its sizes still
 * hold) and the answer is why, to be logged; null when it is made.
 */
export function createCgroup(ref: CgroupRef, limits: Limits): string | null {
  try {
    for (const [controller, dir] of Object.entries(ref.dirs)) makeDir(ref, controller, dir);
    setLimits(ref, limits);
  } catch (e) {
    removeCgroup(ref);
    throw e;
  }
  try {
    if (ref.version === 2) {
      const dir = ref.dirs.unified;
      write(join(dir, "cgroup.subtree_control"), V2_CONTROLLERS.map((c) => `+${c}`).join(" "));
      Deno.mkdirSync(join(dir, "server"), { recursive: true });
    }
    const work = workDirs(ref);
    for (const dir of Object.values(work)) Deno.mkdirSync(dir, { recursive: true });
    setLimits({ version: ref.version, dirs: work }, workLimits(limits), false);
    return null;
  } catch (e) {
    removeReserve(ref);
    return `the server's reserve (a work cgroup) could not be made: ${(e as Error).message}`;
  }
}

/** Whether the sandbox's cgroup has its `work` cgroup (see `createCgroup`). */
export function hasReserve(ref: CgroupRef): boolean {
  return Object.values(workDirs(ref)).every((d) => {
    try {
      return Deno.statSync(d).isDirectory;
    } catch {
      return false;
    }
  });
}

/** Undo a half-made reserve: its directories, and on v2 the controllers handed to them. */
function removeReserve(ref: CgroupRef): void {
  for (const dir of Object.values(workDirs(ref))) {
    try {
      Deno.removeSync(dir);
    } catch { /* not made */ }
  }
  if (ref.version !== 2) return;
  try {
    Deno.removeSync(join(ref.dirs.unified, "server"));
  } catch { /* not made */ }
  try {
    const off = V2_CONTROLLERS.map((c) => `-${c}`).join(" ");
    write(join(ref.dirs.unified, "cgroup.subtree_control"), off);
  } catch { /* never on */ }
}

/**
 * Make a sandbox's directory, and its `sandbar` parent as needed (the last sandbox's removal
 * removes it, so no empty cgroup of ours outlives the sandboxes): the parent's CPU weight, and in
 * v2 the controllers its children get. A parent removed meanwhile by another process is made again.
 */
function makeDir(ref: CgroupRef, controller: string, dir: string): void {
  const parent = dirname(dir);
  for (let attempt = 0;; attempt++) {
    try {
      Deno.mkdirSync(parent, { recursive: true });
      if (ref.version === 2) {
        write(join(parent, "cgroup.subtree_control"), V2_CONTROLLERS.map((c) => `+${c}`).join(" "));
        weigh(join(parent, "cpu.weight"), Math.min(10_000, 100 * navigator.hardwareConcurrency));
      } else if (controller === "cpu") {
        weigh(join(parent, "cpu.shares"), 1024 * navigator.hardwareConcurrency);
      }
      Deno.mkdirSync(dir, { recursive: true });
      return;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound) || attempt >= 3) throw e;
    }
  }
}

/**
 * Write `limits` into `ref`'s directories, and the CPU weight unless `weight` is false (`work`
 * keeps the default: it competes with the server's threads as one group).
 */
function setLimits(ref: CgroupRef, limits: Limits, weight = true): void {
  const quota = limits.cpu === null ? null : Math.round(limits.cpu * PERIOD_US);
  const memory = limits.memory === null ? null : limits.memory * 1024 * 1024;
  const cores = limits.cpu ?? navigator.hardwareConcurrency;
  if (ref.version === 1) {
    const { cpu, memory: mem, pids } = ref.dirs;
    if (weight) weigh(join(cpu, "cpu.shares"), Math.round(1024 * cores));
    if (quota !== null) {
      write(join(cpu, "cpu.cfs_period_us"), `${PERIOD_US}`);
      write(join(cpu, "cpu.cfs_quota_us"), `${quota}`);
    }
    if (memory !== null) {
      write(join(mem, "memory.limit_in_bytes"), `${memory}`);
      // Swap too, where the kernel accounts it: memory plus swap never passes the limit.
      const memsw = join(mem, "memory.memsw.limit_in_bytes");
      if (read(memsw) !== null) write(memsw, `${memory}`);
      else write(join(mem, "memory.swappiness"), "0");
    }
    if (limits.pids !== null) write(join(pids, "pids.max"), `${limits.pids}`);
    return;
  }
  const dir = ref.dirs.unified;
  if (weight) weigh(join(dir, "cpu.weight"), Math.min(10_000, Math.round(100 * cores)));
  if (quota !== null) write(join(dir, "cpu.max"), `${quota} ${PERIOD_US}`);
  if (memory !== null) {
    write(join(dir, "memory.max"), `${memory}`);
    if (read(join(dir, "memory.swap.max")) !== null) write(join(dir, "memory.swap.max"), "0");
  }
  if (limits.pids !== null) write(join(dir, "pids.max"), `${limits.pids}`);
}

/**
 * `argv` behind a shell that first moves itself into the cgroup, then `exec`s it: the sandbox's
 * first process is in its cgroup before it runs anything (and so is every descendant). The
 * shell also opens the `work` cgroup's files for the server, and names them in
 * `SANDBAR_WORK_FDS` (see `cgroup_reserve.ts`), with `inherited`: descriptors this process
 * hands down itself (`trees1:<n>` or `trees2:<n>`, the cgroup for the server's process trees;
 * see `tree_delegation.ts`). With `trees2:` the shell enters `work`, and bubblewrap's script
 * leaves it for the `server` leaf by the `home:` descriptor before the server starts
 * (`launch.ts`).
 */
export function enterArgv(ref: CgroupRef, argv: string[], inherited: string[] = []): string[] {
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const reserve = hasReserve(ref);
  // v2 trees below `work`: the sandbox's cgroup namespace is rooted there (`tree_delegation.ts`).
  const treesInWork = reserve && inherited.some((s) => s.startsWith("trees2:"));
  const entry = reserve ? entryDirs(ref, treesInWork) : [...new Set(Object.values(ref.dirs))];
  // v1: the shell (one thread) moves itself through `tasks` by writing "0", which the kernel
  // does without its global threadgroup lock; a pid in `cgroup.procs` takes that lock, whose
  // taking after an idle spell waits for an RCU grace period (about 6 ms here). v2 has no way
  // but `cgroup.procs`.
  const [file, self] = ref.version === 1 ? ["tasks", "0"] : ["cgroup.procs", "$$"];
  const files = entry.map((d) => q(join(d, file))).join(" ");
  const work = reserve ? workDescriptorFiles(ref, treesInWork) : { files: [], spec: "" };
  const opens = work.files.map(([fd, file]) => `exec ${fd}>${q(file)} || exit 125; `).join("");
  const spec = [work.spec, ...inherited].filter(Boolean).join(";");
  const named = spec ? `SANDBAR_WORK_FDS='${spec}'; export SANDBAR_WORK_FDS; ` : "";
  return [
    "/bin/sh",
    "-c",
    `for f in ${files}; do echo ${self} > "$f" || exit 125; done; ${opens}${named}exec "$@"`,
    "sandbar-enter",
    ...argv,
  ];
}

/**
 * Pids of every process in the cgroup and the cgroups below it (the server gives each process
 * tree a freezer cgroup of its own under the sandbox's: as root on the host, and inside
 * bubblewrap through the descriptor it is handed, `tree_delegation.ts`).
 */
export function members(ref: CgroupRef): number[] {
  return below(ref.version === 1 ? ref.dirs.freezer : ref.dirs.unified).flatMap((dir) =>
    (read(join(dir, "cgroup.procs")) ?? "").split("\n").filter(Boolean).map(Number)
  );
}

/** `dir` and every cgroup directory under it, deepest first. */
function below(dir: string): string[] {
  const found: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (e.isDirectory) found.push(...below(join(dir, e.name)));
    }
  } catch { /* gone */ }
  found.push(dir);
  return found;
}

/**
 * The subdirectories of each directory {@linkcode belowWatched} walks, as last listed. The
 * supervisor walks the sandbox's memory cgroup every 500 ms, and listing every directory at each
 * look left enough garbage for V8's heap to float up by several MiB in an idle supervisor, where
 * a `stat` leaves none that stays.
 */
const listed = new Map<string, string[]>();

/** The subdirectories of `dir`, listed again only when its link count says they changed. */
function subdirectories(dir: string): string[] | null {
  let links: number | null;
  try {
    links = Deno.statSync(dir).nlink;
  } catch {
    listed.delete(dir);
    return null;
  }
  const known = listed.get(dir);
  // A cgroup directory's link count is 2 plus its subdirectories.
  if (known && links !== null && known.length + 2 === links) return known;
  const found: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) if (e.isDirectory) found.push(join(dir, e.name));
  } catch {
    listed.delete(dir);
    return null;
  }
  // A removed cgroup had no cgroups below it (the kernel refuses to remove one that has).
  for (const old of known ?? []) if (!found.includes(old)) listed.delete(old);
  listed.set(dir, found);
  return found;
}

/**
 * What {@linkcode below} returns, for a directory looked at again and again: a directory is
 * listed again only when its link count changed (a cgroup made or removed under it) or one of
 * its subdirectories is gone (one removed and another made between two looks), so the answer is
 * the same as listing everything each time. Null when `dir` is gone.
 */
function belowWatched(dir: string, tries = 3): string[] | null {
  const subs = subdirectories(dir);
  if (subs === null) return null;
  const found: string[] = [];
  for (const sub of subs) {
    const under = belowWatched(sub);
    if (under === null) {
      listed.delete(dir);
      return tries > 0 ? belowWatched(dir, tries - 1) : below(dir);
    }
    found.push(...under);
  }
  found.push(dir);
  return found;
}

/**
 * Freeze every process of the cgroup, those forked meanwhile included, and wait until the kernel
 * says it is frozen (a fork in flight is caught by the freezer, not by a rescan).
 */
export async function freeze(ref: CgroupRef, frozen = true): Promise<void> {
  const [file, value, done] = ref.version === 1
    ? [join(ref.dirs.freezer, "freezer.state"), frozen ? "FROZEN" : "THAWED", "state"]
    : [join(ref.dirs.unified, "cgroup.freeze"), frozen ? "1" : "0", "events"];
  write(file, value);
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    if (done === "state" ? read(file) === value : frozenV2(ref) === frozen) return;
    if (done === "state" && frozen) write(file, value); // v1: FREEZING can need a nudge
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`the cgroup did not become ${frozen ? "frozen" : "thawed"} in 10 s`);
}

function frozenV2(ref: CgroupRef): boolean {
  return /^frozen 1$/m.test(read(join(ref.dirs.unified, "cgroup.events")) ?? "");
}

/**
 * A watcher for a paused sandbox: `sh` that waits for the supervisor `pid` to end and then ends
 * every process of the frozen cgroup (a kill cannot land on a v1-frozen process until it is
 * thawed, so without it they would stay frozen, holding their memory, until someone looks).
 */
export function reaperArgv(ref: CgroupRef, pid: number): string[] {
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  // Only while still frozen: the next look may have ended it already and a new supervisor made
  // the same cgroup again for a fresh start (thawed), which is not this watcher's to kill.
  const end = ref.version === 2
    ? `[ "$(cat ${q(join(ref.dirs.unified, "cgroup.freeze"))})" = 1 ] && ` +
      `echo 1 > ${q(join(ref.dirs.unified, "cgroup.kill"))}`
    : `[ "$(cat ${q(join(ref.dirs.freezer, "freezer.state"))})" = FROZEN ] || exit 0; ` +
      `for f in $(find ${q(ref.dirs.freezer)} -name cgroup.procs); do ` +
      `kill -9 $(cat "$f") 2>/dev/null; done; echo THAWED > ${
        q(join(ref.dirs.freezer, "freezer.state"))
      }`;
  return ["/bin/sh", "-c", `while kill -0 ${pid} 2>/dev/null; do sleep 1; done; ${end}`];
}

/**
 * Kill every process of the cgroup, wherever it moved in the process tree (a `setsid`, a double
 * fork), and wait until none is left. v2 has `cgroup.kill`; v1 freezes the cgroup (no process can
 * fork while frozen), SIGKILLs every member, and thaws it so the kills land.
 */
export async function killAll(ref: CgroupRef): Promise<void> {
  if (ref.version === 2 && read(join(ref.dirs.unified, "cgroup.kill")) !== null) {
    write(join(ref.dirs.unified, "cgroup.kill"), "1");
  } else {
    await freeze(ref).catch(() => {});
    for (const pid of members(ref)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
    await freeze(ref, false).catch(() => {});
  }
  const until = Date.now() + 10_000;
  while (members(ref).length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
    if (ref.version === 1) { for (const pid of members(ref)) Deno.kill(pid, "SIGKILL"); }
  }
}

/** Remove the cgroup's directories (they must be empty of processes); best effort. */
export function removeCgroup(ref: CgroupRef): void {
  for (const dir of new Set(Object.values(ref.dirs))) {
    // The home's host supervises sandbox after sandbox: forget what its walks listed here.
    for (const key of listed.keys()) {
      if (key === dir || key.startsWith(`${dir}/`)) listed.delete(key);
    }
    for (const d of below(dir)) {
      try {
        Deno.removeSync(d); // cgroup directories go with rmdir, children first
      } catch { /* gone, or still busy */ }
    }
    try {
      Deno.removeSync(dirname(dir)); // the `sandbar` parent, once no sandbox is left in it
    } catch { /* other sandboxes in it */ }
  }
}

function num(text: string | null): number | null {
  if (text === null || text === "max") return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}

function field(text: string | null, name: string): number | null {
  const m = new RegExp(`^${name} (\\d+)$`, "m").exec(text ?? "");
  return m ? Number(m[1]) : null;
}

/** What the kernel counted for the cgroup now. */
export function cgroupStats(ref: CgroupRef): CgroupStats {
  if (ref.version === 1) {
    const { cpu, cpuacct, memory, pids } = ref.dirs;
    const ns = num(read(join(cpuacct, "cpuacct.usage")));
    const memsw = num(read(join(memory, "memory.memsw.usage_in_bytes")));
    const limit = num(read(join(memory, "memory.memsw.limit_in_bytes"))) ??
      num(read(join(memory, "memory.limit_in_bytes")));
    const quota = num(read(join(cpu, "cpu.cfs_quota_us")));
    const period = num(read(join(cpu, "cpu.cfs_period_us"))) ?? PERIOD_US;
    return {
      cpuUsageUs: ns === null ? null : Math.round(ns / 1000),
      memoryBytes: memsw ?? num(read(join(memory, "memory.usage_in_bytes"))),
      memoryLimitBytes: limit === null || limit >= UNLIMITED_V1 ? null : limit,
      // v1 counts an OOM kill in the cgroup it happened in (`work`, mostly), not its parents.
      oomKills: (belowWatched(memory) ?? []).reduce(
        (sum, dir) => sum + (field(read(join(dir, "memory.oom_control")), "oom_kill") ?? 0),
        0,
      ),
      pids: num(read(join(pids, "pids.current"))),
      pidsLimit: num(read(join(pids, "pids.max"))),
      cpuLimit: quota === null || quota < 0 ? null : quota / period,
    };
  }
  const dir = ref.dirs.unified;
  const [quota, period] = (read(join(dir, "cpu.max")) ?? "max").split(" ");
  return {
    cpuUsageUs: field(read(join(dir, "cpu.stat")), "usage_usec"),
    memoryBytes: num(read(join(dir, "memory.current"))),
    memoryLimitBytes: num(read(join(dir, "memory.max"))),
    oomKills: field(read(join(dir, "memory.events")), "oom_kill") ?? 0,
    pids: num(read(join(dir, "pids.current"))),
    pidsLimit: num(read(join(dir, "pids.max"))),
    cpuLimit: quota === "max" ? null : Number(quota) / Number(period ?? PERIOD_US),
  };
}
