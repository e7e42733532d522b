/**
 * The cgroups of process trees in one hierarchy (the `cgroup1` and `cgroup2` ways of
 * `trees.ts`): a directory `sandbar-<server pid>` in the server's own cgroup, and in it one
 * cgroup per tree, kept in a pool once empty so that a process start costs no `mkdir`/`rmdir`.
 *
 * Where the server's cgroup is comes from `/proc/self/mountinfo` and `/proc/self/cgroup`
 * (`shared/cgroup_paths.ts`): the mount's root is honoured, so a container that shows part of
 * the host's hierarchy, a cgroup namespace and a hybrid host's `unified` mount all work, and a
 * host without the hierarchy says what was looked for.
 *
 * - **v1** (the `freezer` controller): membership from `cgroup.procs`; a thread moves through
 *   `tasks` (v1 moves single threads), which is how the spawner thread that calls `posix_spawn`
 *   goes into the tree for the call (it writes "0", itself, to `tasks` files the main thread
 *   opened: `confine/spawner.ts`); ending freezes (`freezer.state`), sends
 *   `SIGKILL` to every member, and thaws so the kills land.
 * - **v2** (any cgroup2 mount, no controller needed: `cgroup.procs`, `cgroup.kill` and
 *   `cgroup.freeze` are core files of every non-root cgroup since Linux 5.14): a domain cgroup
 *   takes whole processes only, so a thread cannot be moved for a spawn. The server moves
 *   **itself** into the tree's cgroup for the synchronous spawn call and back right after
 *   ({@linkcode TreeCgroups.bornIn}); every spawn the server makes is a synchronous call on its
 *   JavaScript thread (a spawner thread's `posix_spawn` is waited for, `Deno.Command#spawn`
 *   forks on the calling thread), so nothing else is born in the tree meanwhile, and a tree is
 *   never ended during it (that too happens on the same thread). A process that runs other
 *   JavaScript isolates too (`deno test --parallel`, a program embedding the server with workers
 *   that start processes) could have another of them start a process in that moment: it is put
 *   back right after ({@linkcode TreeCgroups.settle}). Ending is one write of `1` to
 *   `cgroup.kill`: the kernel kills every member and refuses forks until it is done.
 *   ({@linkcode TreeCgroups.end} can also end by freezing, as v1 does, which is what a kernel
 *   without `cgroup.kill` would need; the tests use it.)
 *
 * Moving a whole process (v2), or a thread named by its id (v1), takes the kernel's cgroup
 * threadgroup lock for writing: back to back about 15 µs for the pair, but after an idle spell
 * the lock waits for an RCU grace period first, about 10 ms for the pair in both hierarchies
 * (measured on this 2-core machine, Linux 6.18, 100 ms between spawns). A thread that moves
 * itself, writing "0" to a v1 `tasks` file, is moved without that lock (Linux 6.0 and later:
 * such a thread cannot exit or exec under the move), which is why the v1 spawner thread moves
 * itself: a command after an idle spell no longer waits those 10 ms.
 *
 * @module
 */

import { join } from "node:path";
import {
  cgroupMounts,
  type CgroupPlace,
  cgroupPlace,
  ownCgroupPaths,
} from "../../shared/cgroup_paths.ts";
import { cString, errno, libc, libcAvailable } from "../libc/index.ts";
import { readProcFile } from "../pty/procfs.ts";
import {
  cgroupFileExists,
  childCgroups,
  makeCgroupDir,
  readCgroupFile,
  removeCgroupDir,
  writeCgroupFile,
} from "./cgroup_files.ts";
import { delegatedTreeDir, intoHome, intoWork } from "./work_cgroup.ts";

/** A cgroup hierarchy's version. */
export type CgroupVersion = 1 | 2;

const SIGKILL = 9;
const W_OK = 2;
/** Empty tree cgroups kept for the next trees, per hierarchy. */
const POOL_MAX = 32;
/**
 * Tree directory names: unique in this process, whichever hierarchy, and whichever JavaScript
 * isolate (`deno test --parallel` runs test modules as isolates of one process, each with its
 * own copy of this module, all under the same `sandbar-<pid>`).
 */
let nextTree = 0;
const ISOLATE_TAG = crypto.randomUUID().slice(0, 8);

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The server's own cgroup directory in the hierarchy that process trees of `version` use (v1:
 * the `freezer` controller's; v2: the unified one), if this user may make cgroups in it; else
 * why not. Reads only: nothing is made.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownTreeCgroup } from "./tree_cgroups.ts";
 * const place = ownTreeCgroup(2);
 * assert.ok("dir" in place ? place.dir.startsWith("/") : place.reason.length > 0);
 * ```
 */
export function ownTreeCgroup(version: CgroupVersion): CgroupPlace {
  if (Deno.build.os !== "linux") return { reason: `no cgroups on ${Deno.build.os}` };
  if (!libcAvailable()) return { reason: "no libc here" };
  // Inside a local sandbox: the sandbox's cgroup, handed down by descriptor (`work_cgroup.ts`).
  const delegated = delegatedTreeDir(version);
  if (delegated !== null) {
    return libc().access(cString(delegated), W_OK) === 0
      ? { dir: delegated }
      : { reason: `the delegated cgroup ${delegated} is not writable (errno ${errno()})` };
  }
  const mountinfo = readCgroupFile("/proc/self/mountinfo");
  const table = readCgroupFile("/proc/self/cgroup");
  if (mountinfo === null || table === null) {
    return { reason: "cannot read /proc/self/mountinfo and /proc/self/cgroup" };
  }
  const place = cgroupPlace(
    cgroupMounts(mountinfo),
    ownCgroupPaths(table),
    version === 2 ? "" : "freezer",
  );
  if ("dir" in place && libc().access(cString(place.dir), W_OK) !== 0) {
    return { reason: `${place.dir} is not writable by this user` };
  }
  return place;
}

/** The process trees of one hierarchy. */
export class TreeCgroups {
  /** 1 or 2. */
  readonly version: CgroupVersion;
  /** The server's own cgroup directory. */
  readonly own: string;
  /** `sandbar-<pid>` in it: every tree's cgroup is a child of this one. */
  readonly base: string;
  /**
   * v2 inside a local sandbox: `own` is the sandbox's `work`, delegated, and the server lives in
   * the `server` leaf beside it, outside its cgroup namespace (see {@linkcode bornIn}).
   */
  readonly #delegated: boolean;
  readonly #pool: string[] = [];
  /** Trees ended with members still dying, removed once they are gone. */
  readonly #ending = new Set<string>();

  private constructor(version: CgroupVersion, own: string, base: string) {
    this.version = version;
    this.own = own;
    this.base = base;
    this.#delegated = version === 2 && own === delegatedTreeDir(2);
  }

  /**
   * Trees in the `version` hierarchy, ending first what servers that died left there; or why
   * they cannot be made here.
   */
  static open(version: CgroupVersion): TreeCgroups | string {
    const place = ownTreeCgroup(version);
    if ("reason" in place) return place.reason;
    const own = place.dir;
    const base = join(own, `sandbar-${Deno.pid}`);
    const cgroups = new TreeCgroups(version, own, base);
    cgroups.#clearStale();
    if (!makeCgroupDir(base)) return `cannot make a cgroup in ${own}`;
    const unusable = cgroups.#probe();
    if (unusable !== null) {
      removeCgroupDir(base);
      return unusable;
    }
    return cgroups;
  }

  /** Null when a tree can be made, entered and ended here; else why not. */
  #probe(): string | null {
    if (this.version === 1) {
      return cgroupFileExists(join(this.base, "freezer.state"))
        ? null
        : `${this.base} has no freezer.state`;
    }
    for (const file of ["cgroup.kill", "cgroup.freeze"]) {
      if (!cgroupFileExists(join(this.base, file))) {
        return `${this.base} has no ${file} (Linux 5.14 and later have it)`;
      }
    }
    // What each spawn does: the server into a tree's cgroup and back.
    const dir = this.newTree();
    if (dir === null) return `cannot make a cgroup in ${this.base}`;
    try {
      this.bornIn(dir, () => null);
      this.settle(dir, 0);
    } catch (e) {
      removeCgroupDir(dir);
      return (e as Error).message;
    }
    this.end(dir);
    return null;
  }

  /** A new tree's cgroup (from the pool when one is there), or null when none can be made. */
  newTree(): string | null {
    const reused = this.#pool.pop();
    // Made again if something removed it meanwhile (a server of this process closing).
    if (reused !== undefined && makeCgroupDir(reused)) return reused;
    const dir = join(this.base, `t${++nextTree}-${ISOLATE_TAG}`);
    return makeCgroupDir(dir) ? dir : null;
  }

  /**
   * v2: run `start` (a synchronous spawn) with this whole process in `dir`, so the process it
   * starts is born there; the server is back in its own cgroup when `start` returns or throws.
   *
   * Inside a local sandbox (`work` delegated) each move is two or one: the server lives in the
   * `server` leaf, outside the sandbox's cgroup namespace (rooted at `work`), and Linux checks a
   * move against the namespace of whoever opened the `cgroup.procs` written (`nsdelegate`). So
   * the server goes into `work` through the descriptor the host opened (`procs`), from there
   * into the tree through its own (both ends inside its namespace), and back to `server`
   * through the host's other one (`home`). A spawn refused there (a fork bomb holds every slot
   * of `work`) is made again at home and the child moved in after ({@linkcode settle}): the
   * kernel holds a fork to the limit, not a move.
   */
  bornIn<T>(dir: string, start: () => T): T {
    const into = this.#enter(dir, Deno.pid);
    if (into !== 0) {
      this.#moveHome(); // from `work`, where a two-step move may have stopped
      throw new Error(`could not move the server into the process tree ${dir} (errno ${into})`);
    }
    let made: { value: T } | { error: unknown };
    try {
      made = { value: start() };
    } catch (error) {
      made = { error };
    }
    let back = 0;
    for (let i = 0; i < 3 && (back = this.#moveHome()) !== 0; i++) sleepMs(1);
    if (back !== 0) {
      // Never seen; should it happen, `end` spares the server (see there).
      throw new Error(`could not move the server back into ${this.own} (errno ${back})`);
    }
    if ("error" in made && this.#delegated) made = { value: start() }; // at home; `settle` moves it
    if ("error" in made) throw made.error;
    return made.value;
  }

  /** Move process `pid` into the tree `dir`: 0, or the errno of the move refused. */
  #enter(dir: string, pid: number): number {
    if (this.#delegated && !intoWork(pid)) return errno() || -1;
    return writeCgroupFile(join(dir, "cgroup.procs"), String(pid));
  }

  /** Move process `pid` (the server by default) back to the server's own cgroup: 0, or errno. */
  #moveHome(pid = Deno.pid): number {
    if (this.#delegated) return intoHome(pid) ? 0 : errno() || -1;
    return writeCgroupFile(join(this.own, "cgroup.procs"), String(pid));
  }

  /**
   * v2, right after {@linkcode bornIn}: make `dir` hold what this spawn started and nothing else.
   * The server is one JavaScript thread, so nothing else is born there; but a process running
   * other isolates (a test runner's parallel modules, a program embedding the server with
   * workers that start processes) could have had one of them start a process in the moment the
   * server was in `dir`: a direct child of the server that is not `leader` (and what it already
   * started) goes back to the server's own cgroup. Nothing of the tree's own can pass for one: a
   * process the leader started is the leader's child or, orphaned, init's, never the server's
   * (the server is no subreaper). And `leader`, should another isolate have moved the process
   * elsewhere meanwhile, is moved into `dir`.
   */
  settle(dir: string, leader: number): void {
    const pids = (readCgroupFile(join(dir, "cgroup.procs")) ?? "").split("\n").filter(Boolean)
      .map(Number);
    if (pids.length > (leader > 0 ? 1 : 0) || (leader > 0 && pids[0] !== leader)) {
      const parent = new Map<number, number>();
      for (const pid of pids) {
        const stat = readProcFile(`/proc/${pid}/stat`);
        if (stat !== undefined) {
          parent.set(pid, +stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        }
      }
      const strays = new Set<number>();
      for (const [pid, ppid] of parent) if (ppid === Deno.pid && pid !== leader) strays.add(pid);
      for (let grew = strays.size > 0; grew;) {
        grew = false;
        for (const [pid, ppid] of parent) {
          if (!strays.has(pid) && strays.has(ppid)) {
            strays.add(pid);
            grew = true;
          }
        }
      }
      for (const pid of strays) this.#moveHome(pid);
    }
    if (leader > 0 && !pids.includes(leader)) this.adopt(dir, leader);
  }

  /** v1: the `tasks` files of tree `dir` and of the server's own cgroup (a thread's way in and back). */
  threadFiles(dir: string): { into: string; back: string } {
    return { into: join(dir, "tasks"), back: join(this.own, "tasks") };
  }

  /** Move process `pid` (and, v2, all its threads) into `dir`. */
  adopt(dir: string, pid: number): boolean {
    return this.#enter(dir, pid) === 0;
  }

  /** The pids in `dir` and in the cgroups below it. */
  members(dir: string): number[] {
    const own = (readCgroupFile(join(dir, "cgroup.procs")) ?? "").split("\n").filter(Boolean)
      .map(Number);
    return [...own, ...childCgroups(dir).flatMap((c) => this.members(join(dir, c)))];
  }

  /**
   * Freeze (or thaw) every process in `dir` and below, forks in flight included, and wait until
   * the kernel says it is done; false when it did not say so within `waitMs`.
   */
  freeze(dir: string, frozen: boolean, waitMs = 200): boolean {
    const [file, value] = this.version === 1
      ? ["freezer.state", frozen ? "FROZEN" : "THAWED"]
      : ["cgroup.freeze", frozen ? "1" : "0"];
    if (writeCgroupFile(join(dir, file), value) !== 0) return false;
    for (let waited = 0; waited < waitMs; waited++) {
      if (this.#isFrozen(dir) === frozen) return true;
      // v1: a cgroup can stay FREEZING while a member is in an uninterruptible sleep.
      if (this.version === 1 && frozen) writeCgroupFile(join(dir, file), value);
      sleepMs(1);
    }
    return false;
  }

  #isFrozen(dir: string): boolean {
    if (this.version === 1) return readCgroupFile(join(dir, "freezer.state"))?.trim() === "FROZEN";
    return /^frozen 1$/m.test(readCgroupFile(join(dir, "cgroup.events")) ?? "");
  }

  /**
   * End every process in `dir` and below, for good, and remove it (or, empty and `reuse`, keep
   * it for the next tree). `by`: v2 writes `cgroup.kill` (`"kill"`, where the kernel has it);
   * `"freeze"` freezes, sends `SIGKILL` to every member and thaws, as v1 always does.
   */
  end(dir: string, reuse = true, by: "kill" | "freeze" = "kill"): void {
    const members = this.members(dir);
    if (members.length === 0) {
      if (reuse && this.#pool.length < POOL_MAX) this.#pool.push(dir);
      else this.#removeWhenEmpty(dir);
      return;
    }
    const c = libc();
    if (members.includes(Deno.pid)) {
      // The server itself, left there by a move back that failed: every other member is killed
      // one by one (a kill or a freeze of the cgroup would take the server too).
      for (const pid of members) if (pid !== Deno.pid) c.kill(pid, SIGKILL);
      return;
    }
    if (
      this.version === 2 && by === "kill" && writeCgroupFile(join(dir, "cgroup.kill"), "1") === 0
    ) {
      this.#removeWhenEmpty(dir);
      return;
    }
    const frozen = this.freeze(dir, true);
    // Until no member is left, for at most ~100 ms: on a loaded machine the freeze may not have
    // settled in its wait, and a member not yet frozen forks again between rounds (three rounds
    // without a pause once left a child behind in a clean-clone CI run at load 48).
    for (let round = 0; round < 100; round++) {
      const pids = this.members(dir);
      if (pids.length === 0) break;
      for (const pid of pids) c.kill(pid, SIGKILL);
      // v1: a frozen process dies once thawed (v2 lets SIGKILL through the freezer).
      if (frozen && this.version === 1 && round === 0) this.freeze(dir, false);
      sleepMs(1);
    }
    this.freeze(dir, false);
    this.#removeWhenEmpty(dir);
  }

  /** Remove `dir` (child cgroups first) once its killed members are gone. */
  #removeWhenEmpty(dir: string, tries = 100): void {
    if (this.#removeTree(dir)) return;
    this.#ending.add(dir);
    if (tries > 0) setTimeout(() => this.#removeWhenEmpty(dir, tries - 1), 20);
  }

  /** Remove `dir`, child cgroups first; true when it is gone. */
  #removeTree(dir: string): boolean {
    const removed = childCgroups(dir).every((c) => this.#removeTree(join(dir, c))) &&
      removeCgroupDir(dir);
    if (removed) this.#ending.delete(dir);
    return removed;
  }

  /** The trees of servers that died without ending them: ended now. */
  #clearStale(): void {
    for (const name of childCgroups(this.own)) {
      const m = /^sandbar-(\d+)$/.exec(name);
      if (!m || Number(m[1]) === Deno.pid) continue;
      if (readProcFile(`/proc/${m[1]}/stat`) !== undefined) continue; // that server still runs
      const dir = join(this.own, name);
      for (const t of childCgroups(dir)) this.end(join(dir, t), false);
      this.#removeWhenEmpty(dir);
    }
  }

  /**
   * Remove the pooled cgroups and the server's directory (a tree still in use keeps it; the next
   * server to start ends what a dead one left).
   */
  close(): void {
    for (const dir of this.#pool.splice(0)) removeCgroupDir(dir);
    // Trees ended just now still hold their killed members for a moment: waited for here (the
    // process may exit next, before a timer would remove them), up to half a second.
    // Only this one's: other isolates of the process may have trees under the same directory.
    for (let waited = 0; waited < 250 && this.#ending.size > 0; waited++) {
      for (const dir of [...this.#ending]) this.#removeTree(dir);
      if (this.#ending.size > 0) sleepMs(2);
    }
    removeCgroupDir(this.base);
  }
}
