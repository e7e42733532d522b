/**
 * The `work` cgroup of a local sandbox: where the processes this server starts go, so that a
 * fork bomb or a memory hog among them stops at `work`'s limits, a little below the sandbox's,
 * and the server keeps the difference to answer (see `sdk/providers/local/cgroup_reserve.ts`).
 *
 * The provider hands the server descriptors open on `work`'s files and names them in
 * `SANDBAR_WORK_FDS` (`procs:3,4;tasks:5,6;back:7,8`: `work`'s `cgroup.procs`, and on cgroup v1
 * `work`'s `tasks` and the sandbox cgroup's `tasks`, one per hierarchy), and a cgroup for process
 * trees: on cgroup v1 the sandbox's freezer cgroup (`trees1:<n>`, a directory, n ≥ 10), on
 * cgroup v2 `work` itself (`trees2:<n>`) with the `server` leaf's `cgroup.procs` to come back to
 * (`home:<n>`; {@linkcode delegatedTreeDir}, {@linkcode intoHome}). Inside the sandbox the cgroup
 * file system itself is read-only. They are closed on exec like every inherited
 * descriptor (`confine/hardening.ts`), so no child holds them. Without the variable (a server not
 * started by the local provider) nothing is moved.
 *
 * Two ways in:
 *
 * - born inside (cgroup v1): the spawner thread that calls `posix_spawn` moves itself into
 *   `work` (v1 moves single threads) for the call, so the child is in `work` from its first
 *   instruction ({@linkcode threadWorkFds});
 * - moved after ({@linkcode intoWork}; {@linkcode treeIntoWork} for Chromium, which puppeteer
 *   starts, with whatever it forked before the server saw it): a child born beside the server (v2, whose domain cgroups
 *   take whole processes; a spawn that is not on a spawner thread; a spawn refused because a bomb
 *   holds all of `work`'s slots, made again beside the server) is moved once its spawn returns.
 *   The kernel holds a fork to the limit, not a move, so a command still starts during a bomb;
 *   a program that forks before it is moved leaves that child beside the server (the sandbox's
 *   own limits still hold it).
 *
 * @module
 */

import { libc, libcAvailable } from "../libc/index.ts";
import { listProcessIds, readProcFile } from "../pty/procfs.ts";

interface Descriptors {
  /** `work`'s `cgroup.procs`, per hierarchy. */
  procs: number[];
  /** `work`'s `tasks` (v1). */
  tasks: number[];
  /** The sandbox cgroup's `tasks` (v1): where a spawner thread goes back to. */
  back: number[];
  /**
   * The sandbox's own cgroup directory in the v1 `freezer` hierarchy, delegated for the
   * server's process trees (one descriptor at most; see {@linkcode delegatedTreeDir}).
   */
  trees1: number[];
  /** `work` on cgroup v2, delegated for the server's process trees (one descriptor at most). */
  trees2: number[];
  /** The `server` leaf's `cgroup.procs` (v2, with `trees2`): where the server comes back to. */
  home: number[];
}

const NAMES = ["procs", "tasks", "back", "trees1", "trees2", "home"] as const;

let held: Descriptors | undefined;

/**
 * Read (once) and forget `SANDBAR_WORK_FDS`; the descriptors it names. Called at start, before
 * any child is spawned, so that the variable reaches none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workDescriptors } from "./work_cgroup.ts";
 * assert.ok(Array.isArray(workDescriptors().procs));
 * ```
 */
export function workDescriptors(): Descriptors {
  if (held !== undefined) return held;
  let raw = "";
  try {
    raw = Deno.env.get("SANDBAR_WORK_FDS") ?? "";
    Deno.env.delete("SANDBAR_WORK_FDS");
  } catch { /* no --allow-env for it: not started by the local provider */ }
  const found: Descriptors = { procs: [], tasks: [], back: [], trees1: [], trees2: [], home: [] };
  for (const part of raw.split(";")) {
    const [name, list] = part.split(":");
    if (!(NAMES as readonly string[]).includes(name)) continue;
    found[name as typeof NAMES[number]] = (list ?? "").split(",").filter((s) => /^\d+$/.test(s))
      .map(Number)
      .filter((n) => n > 2);
  }
  if (found.tasks.length !== found.back.length) found.tasks = found.back = [];
  if (found.trees1.length !== 1) found.trees1 = [];
  // v2 trees need both ways of the two-step move: into `work` (`procs`) and back (`home`).
  if (found.trees2.length !== 1 || found.home.length !== 1 || found.procs.length !== 1) {
    found.trees2 = found.home = [];
  }
  return (held = found);
}

/**
 * The cgroup directory the local provider delegated for process trees of cgroup `version`, as
 * a path through this process's own descriptor (`/proc/self/fd/<n>`), or null when there is none
 * (a server not started by the local provider, or a hierarchy not delegated).
 *
 * The descriptor is a detached copy of the mount at that one directory (`open_tree` with
 * `OPEN_TREE_CLONE`, made on the host by the supervisor): `..` at its top stays there, so
 * nothing reached through it lies outside the sandbox's cgroup. `/proc/self/fd/<n>` names this
 * process's own descriptor table in the sandbox's `/proc`, which no process in the sandbox can
 * remount (none has a capability); the names below it are in the cgroup file system, which no
 * process in the sandbox can write (its mounts of it are read-only, and Landlock withholds
 * `/sys` from confined processes). The descriptor is closed on exec like every inherited one
 * (`confine/hardening.ts`), and `/proc/<server>/fd` is closed to the server's children (the
 * server is not dumpable).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { delegatedTreeDir, workDescriptors } from "./work_cgroup.ts";
 * if (workDescriptors().trees1.length === 0) assert.equal(delegatedTreeDir(1), null);
 * ```
 */
export function delegatedTreeDir(version: 1 | 2): string | null {
  const fd = workDescriptors()[version === 1 ? "trees1" : "trees2"][0];
  return fd === undefined ? null : `/proc/self/fd/${fd}`;
}

function writeEach(fds: number[], id: number): boolean {
  if (fds.length === 0 || id <= 0 || !libcAvailable()) return false;
  const bytes = new TextEncoder().encode(`${id}\n`);
  let ok = true;
  for (const fd of fds) {
    if (Number(libc().write(fd, bytes, BigInt(bytes.length))) !== bytes.length) ok = false;
  }
  return ok;
}

/**
 * Move process `pid` (just spawned; all its threads) into `work`. False when there is no
 * `work`, or when the kernel refused (the process is gone). Moving a process already there
 * changes nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { intoWork, workDescriptors } from "./work_cgroup.ts";
 * if (workDescriptors().procs.length === 0) assert.equal(intoWork(Deno.pid), false);
 * ```
 */
export function intoWork(pid: number): boolean {
  return writeEach(workDescriptors().procs, pid);
}

/**
 * Move process `pid` back into the sandbox's `server` leaf (cgroup v2, where `work` is delegated
 * for process trees): false when there is no such descriptor or the kernel refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { intoHome, workDescriptors } from "./work_cgroup.ts";
 * if (workDescriptors().home.length === 0) assert.equal(intoHome(Deno.pid), false);
 * ```
 */
export function intoHome(pid: number): boolean {
  return writeEach(workDescriptors().home, pid);
}

/**
 * The descriptors of the v1 `tasks` files a spawner thread moves itself through into `work` and
 * back beside the server (it writes "0": `confine/spawner.ts`); empty where threads cannot be
 * moved (v2, no `work`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { threadWorkFds, workDescriptors } from "./work_cgroup.ts";
 * if (workDescriptors().tasks.length === 0) assert.deepEqual(threadWorkFds().into, []);
 * ```
 */
export function threadWorkFds(): { into: number[]; back: number[] } {
  const { tasks, back } = workDescriptors();
  return { into: tasks, back };
}

/**
 * Move `pid` and every process descending from it into `work`, for a program the server did not
 * spawn itself (Chromium, which puppeteer starts) and found only once running. Two rounds: a
 * process forked between the first look and its parent's move is caught by the second; what its
 * parent forks after the move is born in `work`. (What left the tree by a double fork before, such
 * as Chromium's two crash handlers, stays beside the server.) How many moves the kernel took.
 */
export function treeIntoWork(pid: number): number {
  if (workDescriptors().procs.length === 0 || !libcAvailable()) return 0;
  let moved = 0;
  for (let round = 0; round < 2; round++) {
    const parent = new Map<number, number>();
    for (const p of listProcessIds()) {
      const text = readProcFile(`/proc/${p}/stat`);
      // pid (comm) state ppid …: comm may hold spaces and parentheses.
      if (text !== undefined) parent.set(p, +text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
    }
    const tree = new Set([pid]);
    for (let grew = true; grew;) {
      grew = false;
      for (const [p, pp] of parent) {
        if (!tree.has(p) && tree.has(pp)) {
          tree.add(p);
          grew = true;
        }
      }
    }
    for (const p of tree) if (intoWork(p)) moved++;
  }
  return moved;
}
