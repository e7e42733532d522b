/**
 * Process trees: everything a process the server started goes on to start, ended together and
 * for good. A process group is not enough: `setsid`, a double fork, `disown` or `setpgid` leave
 * it, and such a process outlived the command, the turn, the session and the server.
 *
 * Three ways, chosen once per server ({@linkcode treeMode}), the first that works here:
 *
 * - `cgroup2`: a cgroup per tree in the server's own cgroup of the v2 (unified) hierarchy, found
 *   through `/proc/self/mountinfo` and `/proc/self/cgroup` wherever it is mounted (a pure v2 host
 *   at `/sys/fs/cgroup`, a hybrid one at `/sys/fs/cgroup/unified`), when this user may write
 *   there; inside a local sandbox, in the sandbox's `work` cgroup that the local provider hands
 *   the server by descriptor (`trees2:<n>`, with `home:<n>` to come back by; see
 *   `work_cgroup.ts` and `sdk/providers/local/tree_delegation.ts`), so `work`'s limits hold for
 *   every tree. No controller is needed: `cgroup.procs`, `cgroup.kill` and `cgroup.freeze` are
 *   core files. A child is born in its tree because the server moves itself into the tree's cgroup
 *   for the synchronous spawn call (see `tree_cgroups.ts`; v2 moves whole processes only, and
 *   `CLONE_INTO_CGROUP` needs `clone3`, which glibc's `posix_spawn` uses only from glibc 2.39
 *   on, with `posix_spawnattr_setcgroup_np`). Ending writes `cgroup.kill`. Preferred: one write
 *   ends a tree, forks during the kill included, with nothing to freeze and thaw.
 * - `cgroup1`: a freezer cgroup per tree in the server's own cgroup of the v1 `freezer`
 *   hierarchy; inside a local sandbox, whose cgroup file system is bound read-only, in the
 *   sandbox's freezer cgroup that the local provider hands the server by descriptor
 *   (`trees1:<n>` in `SANDBAR_WORK_FDS`, reached as `/proc/self/fd/<n>`; see `work_cgroup.ts`
 *   and `sdk/providers/local/tree_delegation.ts`). The spawner thread that calls `posix_spawn` is moved into the tree for the call
 *   (v1 moves a single thread by its id); a child started without a spawner thread is moved by
 *   its pid a moment after its start (by itself, through a shell, when `Deno.Command` starts it).
 *   Ending freezes the cgroup (no fork can race the kill), sends `SIGKILL` to every member, and
 *   thaws it.
 * - `session` (no writable cgroup hierarchy and none delegated: a host where the server is not
 *   root and has no delegated subtree, or a local sandbox whose supervisor could delegate none,
 *   as its log says; or `SANDBAR_PROCESS_TREES=session`): ending a tree sends `SIGKILL` to its
 *   process group, to every process of its session and to every process descending from its
 *   leader, found in `/proc` (`tree_sessions.ts`). What it cannot find: a process that called
 *   `setsid` and whose parent had already exited. That one lives until its session ends by
 *   itself, or, in a local sandbox, until the sandbox stops (its PID namespace ends with the
 *   server). The capabilities document says so ({@linkcode processTreeWarnings}).
 *
 * In both cgroup ways a process cannot leave its tree without write access to the cgroup files,
 * which no confined process has (Landlock withholds writes to `/sys`; inside a local sandbox the
 * cgroup mounts are read-only too, and the delegated descriptor is the server's alone: closed on
 * exec, and `/proc/<server>/fd` refused to its children, which are not the server's tracers). A kernel, started by the
 * kernel bridge, is moved into a tree of its own by its pid before it has run a caller's code.
 *
 * `SANDBAR_PROCESS_TREES` picks a way: `cgroup2`, `cgroup1`, `cgroup` (either, v2 first) or
 * `session`. A cgroup way asked for and not possible here stops the server with what was looked
 * for; unset, the first way that works is taken.
 *
 * A child subreaper (`PR_SET_CHILD_SUBREAPER`) for the session mode was weighed and not used:
 * the orphans it hands the server carry nothing that says which tree they came from, and Deno's
 * runtime reaps only the children it started, so they would pile up as zombies of the server.
 *
 * @module
 */

import { libcAvailable } from "../libc/index.ts";
import { type CgroupVersion, TreeCgroups } from "./tree_cgroups.ts";
import { endSession } from "./tree_sessions.ts";
import { delegatedTreeDir, intoWork, workDescriptors } from "./work_cgroup.ts";

/** How trees are ended on this server. */
export type TreeMode = "cgroup2" | "cgroup1" | "session";

const ASKED = ["cgroup2", "cgroup1", "cgroup", "session"];

/** Each hierarchy's trees, once opened (or why it could not be). */
const opened = new Map<CgroupVersion, TreeCgroups | string>();

/**
 * The process trees of the cgroup `version` hierarchy in this process, or why there are none.
 * Opened once: what a server that died left there is ended then.
 */
export function treeCgroups(version: CgroupVersion): TreeCgroups | string {
  let found = opened.get(version);
  if (found === undefined) opened.set(version, found = TreeCgroups.open(version));
  return found;
}

let chosen: TreeCgroups | null | undefined;
/** Why trees run in session mode (set by `choose`), for the capabilities document. */
let sessionReason = "";

/** The way `SANDBAR_PROCESS_TREES` asks for, or undefined; throws for an unknown one. */
function askedWay(): string | undefined {
  const asked = Deno.env.get("SANDBAR_PROCESS_TREES") || undefined;
  if (asked !== undefined && !ASKED.includes(asked)) {
    throw new Error(
      `SANDBAR_PROCESS_TREES must be one of ${ASKED.join(", ")}, not ${
        JSON.stringify(asked.slice(0, 40))
      }`,
    );
  }
  return asked;
}

/**
 * What a server checks at start: a `SANDBAR_PROCESS_TREES` it does not know, or a cgroup way it
 * asks for and this host cannot give, stops the server with the reason. Unasked, the way is
 * found later (its probe loads libc and moves the process: tens of milliseconds the server's
 * start does not wait for; see `serve.ts`).
 */
export function checkAskedTreeMode(): void {
  const asked = askedWay();
  if (asked !== undefined && asked !== "session") treeMode();
}

function choose(): TreeCgroups | null {
  const asked = askedWay();
  if (asked === "session") {
    sessionReason = "SANDBAR_PROCESS_TREES=session";
    return null;
  }
  const versions: CgroupVersion[] = asked === "cgroup1" ? [1] : asked === "cgroup2" ? [2] : [2, 1];
  const reasons: string[] = [];
  if (Deno.build.os !== "linux" || !libcAvailable()) {
    reasons.push(Deno.build.os === "linux" ? "no libc here" : `no cgroups on ${Deno.build.os}`);
  } else {
    for (const v of versions) {
      const found = treeCgroups(v);
      if (typeof found !== "string") return found;
      reasons.push(`cgroup v${v}: ${found}`);
    }
  }
  if (
    workDescriptors().procs.length > 0 && delegatedTreeDir(1) === null &&
    delegatedTreeDir(2) === null
  ) {
    // A local sandbox's server (it was handed `work`), with no cgroup for its trees.
    reasons.push(
      "in a local sandbox, no cgroup was delegated for process trees (the sandbox's log says why)",
    );
  }
  if (asked !== undefined) {
    throw new Error(
      `SANDBAR_PROCESS_TREES=${asked}: process trees cannot be cgroups here (${
        reasons.join("; ")
      })`,
    );
  }
  sessionReason = reasons.join("; ");
  return null;
}

/** The trees of the way this server took, or null (session mode). */
function defaultCgroups(): TreeCgroups | null {
  if (chosen === undefined) chosen = choose();
  return chosen;
}

/**
 * How this server ends process trees (decided on first call; `SANDBAR_PROCESS_TREES` can ask).
 * Throws when the variable asks for what is not possible here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { treeMode } from "./trees.ts";
 * assert.ok(["cgroup2", "cgroup1", "session"].includes(treeMode()));
 * ```
 */
export function treeMode(): TreeMode {
  const cgroups = defaultCgroups();
  return cgroups === null ? "session" : cgroups.version === 2 ? "cgroup2" : "cgroup1";
}

/**
 * What the capabilities document says when process trees are ended without a cgroup (session
 * mode): a process that called `setsid` after its parent had exited is not found, and may
 * outlive its owner. Nothing in a cgroup mode.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { processTreeWarnings, treeMode } from "./trees.ts";
 * assert.equal(processTreeWarnings().length, treeMode() === "session" ? 1 : 0);
 * ```
 */
export function processTreeWarnings(): string[] {
  if (treeMode() !== "session") return [];
  return [
    `Process trees are ended by session, process group and /proc descendants, not by a cgroup ` +
    `(${sessionReason}): a process that calls setsid after its parent exited may outlive its ` +
    "turn, session or context",
  ];
}

/** Whether a tree's spawn is under way (see `ProcessTree.spawn`). */
let spawningWork = false;

/**
 * Whether the process the spawner thread is about to make is one of a tree's: it belongs in a
 * local sandbox's `work` cgroup, away from the server's reserve (`work_cgroup.ts`), unlike the
 * server's own helpers.
 */
export function spawnIntoWork(): boolean {
  return spawningWork;
}

/** The v1 spawn under way: the cgroup its spawner thread goes into, and whose it is. */
let spawning: { cgroups: TreeCgroups; dir: string } | null = null;

/** Whether the spawn under way was made on a spawner thread moved into its tree. */
let bornInside = false;

/** Whether the spawn under way was made on a spawner thread moved into `work` too. */
let spawnedInWork = false;

/**
 * The v1 `tasks` files a spawner thread moves itself through for a tree's spawn (see
 * `confine/spawner.ts`): the tree's, and the server's own cgroup's to come back to.
 */
export interface SpawnTasks {
  /** The tree's `tasks`. */
  into: string;
  /** The server's own cgroup's `tasks`. */
  back: string;
}

/**
 * Where the spawner thread calling `posix_spawn` now must be while it does (cgroup v1), or
 * null. The spawner asks just before it calls, and moves its thread there for the call.
 */
export function spawnCgroup(): SpawnTasks | null {
  if (spawning === null) return null;
  bornInside = true;
  return spawning.cgroups.threadFiles(spawning.dir);
}

/** Said by the spawner: the process of the spawn under way was born in `work`. */
export function bornInWork(): void {
  spawnedInWork = true;
}

/**
 * One tree: the processes a spawned process and its descendants make, ended at once by
 * {@linkcode ProcessTree.end}.
 *
 * @example
 * ```ts ignore
 * const tree = new ProcessTree();
 * const child = tree.spawn(() => new NativeChild(spec, onChunk));
 * tree.end();
 * ```
 */
export class ProcessTree {
  /** The tree's cgroup directory (a cgroup mode), else null. */
  readonly cgroup: string | null;
  readonly #cgroups: TreeCgroups | null;
  #leader = 0;
  #ended = false;
  /** Whether its processes go into a local sandbox's `work` cgroup (not the server's helpers). */
  #work = true;

  /**
   * A new, empty tree, in the way this server took, or in the hierarchy of `cgroups` (one of
   * {@linkcode treeCgroups}).
   */
  constructor(cgroups: TreeCgroups | null = defaultCgroups()) {
    this.#cgroups = cgroups;
    this.cgroup = cgroups?.newTree() ?? null;
  }

  /**
   * Run `start` (a synchronous spawn) so that the process it makes is born in this tree; then
   * make its pid the tree's leader. In a local sandbox it goes into the `work` cgroup
   * (`work_cgroup.ts`) too, unless `work` is false (the server's own helpers, which stay beside
   * it), or the tree is a v2 cgroup (a v2 process is in one cgroup only: the tree's).
   */
  spawn<T extends { pid: number }>(start: () => T, work = true): T {
    const cgroups = this.#cgroups;
    if (cgroups?.version === 2 && this.cgroup !== null) {
      this.#work = false;
      const made = cgroups.bornIn(this.cgroup, start);
      cgroups.settle(this.cgroup, made.pid);
      this.#leader = made.pid;
      return made;
    }
    this.#work = work;
    spawning = cgroups !== null && this.cgroup !== null ? { cgroups, dir: this.cgroup } : null;
    spawningWork = work;
    bornInside = spawnedInWork = false;
    let made: T;
    try {
      made = start();
    } finally {
      spawning = null;
      spawningWork = false;
    }
    // Born inside on a spawner thread; else (no confinement) moved now, a moment after its
    // start. A move of a process (by its pid) takes the kernel's threadgroup lock, which after an
    // idle spell waits for an RCU grace period: one born where it belongs is not moved again.
    this.#leader = made.pid;
    if (work && !spawnedInWork) intoWork(made.pid);
    if (!bornInside && this.cgroup) this.#cgroups!.adopt(this.cgroup, made.pid);
    return made;
  }

  /**
   * Put `pid` (a process that has run none of a caller's code yet, such as a kernel that just
   * started) into the tree, and make it the tree's leader; in a local sandbox into its `work`
   * cgroup too (but not beside a v2 tree's, which holds it).
   */
  adopt(pid: number): void {
    this.#leader = pid;
    if (this.#work && this.#cgroups?.version !== 2) intoWork(pid);
    if (this.cgroup) this.#cgroups!.adopt(this.cgroup, pid);
  }

  /** The pids in the tree's cgroup (a cgroup mode), else an empty list. */
  members(): number[] {
    return this.cgroup ? this.#cgroups!.members(this.cgroup) : [];
  }

  /**
   * Freeze (pause) every process of the tree, or thaw it; true once the kernel says it is done.
   * A cgroup mode only: false in session mode, where nothing can hold a forking tree still.
   */
  freeze(frozen: boolean): boolean {
    return this.cgroup !== null && !this.#ended && this.#cgroups!.freeze(this.cgroup, frozen);
  }

  /**
   * End every process of the tree, for good; idempotent. `leaderReaped`: the leader has been
   * reaped already, so its pid is no longer the tree's to follow (session mode).
   */
  end(leaderReaped = false): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.cgroup) this.#cgroups!.end(this.cgroup);
    else if (this.#leader > 0 && libcAvailable()) endSession(this.#leader, leaderReaped);
  }

  /** Whether {@linkcode end} was called. */
  get ended(): boolean {
    return this.#ended;
  }
}

/**
 * Remove the server's tree directories at exit, once every tree has been ended by its owner (a
 * tree still in use keeps them; the next server to start ends what a dead one left).
 */
export function closeTrees(): void {
  for (const cgroups of opened.values()) if (typeof cgroups !== "string") cgroups.close();
}
