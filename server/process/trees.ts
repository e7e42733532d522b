/**
 * Process trees: everything a process the server started goes on to start, ended together and
 * for good. A process group is not enough: `setsid`, a double fork, `disown` or `setpgid` leave
 * it, and such a process outlived the command, the turn, the session and the server.
 *
 * Two ways, chosen once per server ({@linkcode treeMode}):
 *
 * - `cgroup` (cgroup v1 with a writable freezer hierarchy, the server running as root): each
 *   tree is a freezer cgroup of its own under `sandbar-<server pid>` in the server's freezer
 *   cgroup. A process cannot leave its cgroup without write access to the cgroup files, which
 *   no confined process has (Landlock withholds writes to `/sys`). The tree's first process is
 *   in it from its first instruction: the spawner thread that calls `posix_spawn` is moved into
 *   the cgroup (v1 moves a single thread by its id) just before, and back just after, so the
 *   child is born inside. Ending it freezes the cgroup (no fork can race the kill), sends
 *   `SIGKILL` to every member, thaws it and removes it once empty.
 * - `session` (everywhere else: cgroup v2, whose domain cgroups take whole processes only so a
 *   child could fork before it is moved; no writable cgroup file system, as inside a local
 *   sandbox's bubblewrap namespace; `SANDBAR_PROCESS_TREES=session`): ending a tree sends
 *   `SIGKILL` to its process group, to every process of its session (a double fork or `disown`
 *   keeps the session, whoever its parent becomes) and to every process descending from its
 *   leader, found in `/proc`. What it cannot find: a process that called `setsid` and whose
 *   parent had already exited. That one lives until its session ends by itself, or, in a local
 *   sandbox, until the sandbox stops (its PID namespace ends with the server).
 *
 * A child subreaper (`PR_SET_CHILD_SUBREAPER`) for the session mode was weighed and not used:
 * the orphans it hands the server carry nothing that says which tree they came from, and Deno's
 * runtime reaps only the children it started, so they would pile up as zombies of the server.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { cString, errno, libc, libcAvailable } from "../libc/index.ts";
import { listProcessIds, readProcFile } from "../pty/procfs.ts";

/** How trees are ended on this server. */
export type TreeMode = "cgroup" | "session";

const AT_FDCWD = -100;
const AT_REMOVEDIR = 0x200;
const O_RDONLY = 0;
const O_WRONLY = 1;
const O_CLOEXEC = 0o2000000;
const SIGKILL = 9;
const FREEZER = "/sys/fs/cgroup/freezer";

let base: string | null | undefined;

function writeFile(path: string, text: string): boolean {
  const c = libc();
  const fd = c.open(cString(path), O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  try {
    const bytes = new TextEncoder().encode(text);
    return Number(c.write(fd, bytes, BigInt(bytes.length))) === bytes.length;
  } finally {
    c.close(fd);
  }
}

/** A file of `/sys` or `/proc` read through libc (Deno asks `--allow-all` for those trees). */
function readText(path: string): string | null {
  const c = libc();
  const fd = c.open(cString(path), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return null;
  try {
    const chunks: Uint8Array[] = [];
    for (;;) {
      const buf = new Uint8Array(65536);
      const n = Number(c.read(fd, buf, BigInt(buf.length)));
      if (n < 0) return null;
      if (n === 0) break;
      chunks.push(buf.subarray(0, n));
    }
    const all = new Uint8Array(chunks.reduce((a, b) => a + b.length, 0));
    let at = 0;
    for (const b of chunks) {
      all.set(b, at);
      at += b.length;
    }
    return new TextDecoder().decode(all);
  } finally {
    c.close(fd);
  }
}

function mkdir(path: string): boolean {
  return libc().mkdirat(AT_FDCWD, cString(path), 0o700) === 0 || errno() === 17 /* EEXIST */;
}

function rmdir(path: string): boolean {
  return libc().unlinkat(AT_FDCWD, cString(path), AT_REMOVEDIR) === 0;
}

/** The server's own freezer cgroup directory, from `/proc/self/cgroup`, or null. */
function ownFreezer(): string | null {
  const table = readProcFile("/proc/self/cgroup");
  if (table === undefined) return null;
  for (const line of table.split("\n")) {
    const [, controllers, path] = line.split(":");
    if (controllers?.split(",").includes("freezer") && path !== undefined) {
      return join(FREEZER, path);
    }
  }
  return null;
}

/** Why trees run in session mode (set by `probe`), for the capabilities document. */
let sessionReason = "";

function probe(): string | null {
  const asked = Deno.env.get("SANDBAR_PROCESS_TREES");
  sessionReason = "SANDBAR_PROCESS_TREES=session";
  if (asked === "session") return null;
  if (asked !== undefined && asked !== "" && asked !== "cgroup") {
    throw new Error(
      `SANDBAR_PROCESS_TREES must be "cgroup" or "session", not ${
        JSON.stringify(asked.slice(0, 40))
      }`,
    );
  }
  sessionReason = Deno.build.os === "linux" ? "no libc here" : `no cgroups on ${Deno.build.os}`;
  if (Deno.build.os !== "linux" || !libcAvailable()) return null;
  const own = ownFreezer();
  sessionReason = "no cgroup v1 freezer hierarchy mounted here";
  if (own === null) return null;
  clearStale(own);
  const dir = join(own, `sandbar-${Deno.pid}`);
  sessionReason = `cannot make a freezer cgroup in ${own}`;
  return mkdir(dir) ? dir : null;
}

/** The subdirectories of a cgroup directory (through libc, as `readText`). */
function subdirectories(path: string): string[] {
  const c = libc();
  const dir = c.opendir(cString(path));
  if (dir === null) return [];
  const names: string[] = [];
  try {
    for (let entry = c.readdir(dir); entry !== null; entry = c.readdir(dir)) {
      // struct dirent: d_ino 8, d_off 8, d_reclen 2, d_type 1, d_name.
      const view = new Deno.UnsafePointerView(entry);
      const name = view.getCString(19);
      if (view.getUint8(18) === 4 /* DT_DIR */ && name !== "." && name !== "..") names.push(name);
    }
  } finally {
    c.closedir(dir);
  }
  return names;
}

/** The trees of servers that died without ending them: ended now. */
function clearStale(own: string): void {
  for (const name of subdirectories(own)) {
    const m = /^sandbar-(\d+)$/.exec(name);
    if (!m || Number(m[1]) === Deno.pid) continue;
    if (readProcFile(`/proc/${m[1]}/stat`) !== undefined) continue; // that server still runs
    const dir = join(own, name);
    for (const t of subdirectories(dir)) endCgroup(join(dir, t), false);
    removeWhenEmpty(dir);
  }
}

/**
 * How this server ends process trees: `cgroup` where it can make freezer cgroups (cgroup v1,
 * as root), else `session`. Decided on first call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { treeMode } from "./trees.ts";
 * assert.ok(["cgroup", "session"].includes(treeMode()));
 * ```
 */
export function treeMode(): TreeMode {
  base ??= probe();
  return base === null ? "session" : "cgroup";
}

/**
 * What the capabilities document says when process trees are ended without a cgroup (session
 * mode): a process that called `setsid` after its parent had exited is not found, and may
 * outlive its owner. Nothing in cgroup mode.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { processTreeWarnings, treeMode } from "./trees.ts";
 * assert.equal(processTreeWarnings().length, treeMode() === "session" ? 1 : 0);
 * ```
 */
export function processTreeWarnings(): string[] {
  if (treeMode() === "cgroup") return [];
  return [
    `Process trees are ended by session, process group and /proc descendants, not by a cgroup ` +
    `(${sessionReason}): a process that calls setsid after its parent exited may outlive its ` +
    "turn, session or context",
  ];
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function members(dir: string): number[] {
  const text = readText(join(dir, "cgroup.procs"));
  if (text === null) return [];
  return text.split("\n").filter(Boolean).map(Number);
}

/** Empty tree cgroups kept for the next trees: no `mkdir` and `rmdir` for each process. */
const pool: string[] = [];
const POOL_MAX = 32;

/**
 * Freeze, kill every member, thaw: no member can fork while it is being killed. An empty cgroup
 * (the usual case: the leader has exited and left nothing) goes back to the pool when `reuse`.
 */
function endCgroup(dir: string, reuse = true): void {
  if (members(dir).length === 0) {
    if (reuse && pool.length < POOL_MAX) pool.push(dir);
    else removeWhenEmpty(dir);
    return;
  }
  const state = join(dir, "freezer.state");
  const frozen = writeFile(state, "FROZEN");
  for (let i = 0; frozen && i < 50 && readText(state)?.trim() !== "FROZEN"; i++) sleepMs(1);
  const c = libc();
  for (let round = 0; round < 3; round++) {
    const pids = members(dir);
    if (pids.length === 0) break;
    for (const pid of pids) c.kill(pid, SIGKILL);
    if (frozen) writeFile(state, "THAWED");
  }
  writeFile(state, "THAWED");
  removeWhenEmpty(dir);
}

/** Remove a cgroup once its killed members are gone (they leave it as they exit). */
function removeWhenEmpty(dir: string, tries = 100): void {
  if (rmdir(dir) || errno() === 2 /* ENOENT */) return;
  if (tries > 0) setTimeout(() => removeWhenEmpty(dir, tries - 1), 20);
}

interface Stat {
  pid: number;
  zombie: boolean;
  ppid: number;
  pgrp: number;
  session: number;
}

function processTable(): Stat[] {
  const out: Stat[] = [];
  // Through libc: Deno refuses `/proc` paths without `--allow-all` (see `pty/procfs.ts`).
  for (const pid of listProcessIds()) {
    const text = readProcFile(`/proc/${pid}/stat`);
    if (text === undefined) continue;
    // pid (comm) state ppid pgrp session …: comm may hold spaces and parentheses.
    const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
    out.push({
      pid,
      zombie: rest[0] === "Z",
      ppid: +rest[1],
      pgrp: +rest[2],
      session: +rest[3],
    });
  }
  return out;
}

/**
 * `SIGKILL` to the group and session `leader` made, and to everything descending from it, until
 * none is left running (a process may fork while the first round is sent).
 */
function endSession(leader: number, reaped: boolean): void {
  const c = libc();
  for (let round = 0; round < 5; round++) {
    const table = processTable();
    // A reaped leader's pid may belong to another process by now: then only its group and
    // session are followed (its children were handed to init when it exited).
    const doomed = new Set<number>(reaped ? [] : [leader]);
    for (const p of table) if (p.pgrp === leader || p.session === leader) doomed.add(p.pid);
    for (let grew = !reaped; grew;) {
      grew = false;
      for (const p of table) {
        if (!doomed.has(p.pid) && doomed.has(p.ppid)) {
          doomed.add(p.pid);
          grew = true;
        }
      }
    }
    doomed.delete(Deno.pid);
    if (reaped) {
      for (const p of table) if (p.pid === leader && p.session !== leader) doomed.delete(p.pid);
    }
    const running = table.filter((p) => doomed.has(p.pid) && !p.zombie);
    if (running.length === 0) return;
    for (const p of running) c.kill(p.pid, SIGKILL);
  }
}

let nextTree = 0;
/** The cgroup the next `posix_spawn` on a spawner thread is made in (see `ProcessTree.spawn`). */
let spawningInto: string | null = null;

/** Whether the spawn under way was made on a spawner thread moved into its tree. */
let bornInside = false;

/**
 * Where the spawner thread calling `posix_spawn` now must be while it does, or null. The
 * spawner asks just before it calls, and moves its thread there for the call.
 */
export function spawnCgroup(): string | null {
  if (spawningInto !== null) bornInside = true;
  return spawningInto;
}

/**
 * Move thread `tid` into the cgroup `dir` (v1 `tasks`), or back to the server's own when `dir`
 * is null. False when the kernel refused.
 */
export function moveThread(tid: number, dir: string | null): boolean {
  const to = dir ?? (base ? dirname(base) : null);
  return to !== null && writeFile(join(to, "tasks"), String(tid));
}

/**
 * One tree: the processes a spawned process and its descendants make, ended at once by
 * {@linkcode ProcessTree.end}.
 *
 * @example
 * ```ts ignore
 * const tree = new ProcessTree();
 * const child = tree.spawn(() => new NativeChild(spec, onChunk));
 * tree.adopt(child.pid);
 * tree.end();
 * ```
 */
export class ProcessTree {
  /** The tree's cgroup directory (mode `cgroup`), else null. */
  readonly cgroup: string | null;
  #leader = 0;
  #ended = false;

  /** A new, empty tree. */
  constructor() {
    treeMode();
    if (base) {
      const reused = pool.pop();
      const dir = reused ?? join(base, `t${++nextTree}`);
      this.cgroup = reused !== undefined || mkdir(dir) ? dir : null;
    } else {
      this.cgroup = null;
    }
  }

  /**
   * Run `start` (a synchronous spawn) so that the process it makes on a spawner thread is born
   * in this tree; then {@linkcode adopt} its pid (which moves a process started some other way).
   */
  spawn<T extends { pid: number }>(start: () => T): T {
    spawningInto = this.cgroup;
    bornInside = false;
    let made: T;
    try {
      made = start();
    } finally {
      spawningInto = null;
    }
    // Born inside on a spawner thread; else (no confinement) moved now, a moment after its start.
    if (bornInside) this.#leader = made.pid;
    else this.adopt(made.pid);
    return made;
  }

  /**
   * Put `pid` (a process that has run none of a caller's code yet, such as a kernel that just
   * started) into the tree, and make it the tree's leader.
   */
  adopt(pid: number): void {
    this.#leader = pid;
    if (this.cgroup) writeFile(join(this.cgroup, "cgroup.procs"), String(pid));
  }

  /**
   * End every process of the tree, for good; idempotent. `leaderReaped`: the leader has been
   * reaped already, so its pid is no longer the tree's to follow (session mode).
   */
  end(leaderReaped = false): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.cgroup) endCgroup(this.cgroup);
    else if (this.#leader > 0 && libcAvailable()) endSession(this.#leader, leaderReaped);
  }

  /** Whether {@linkcode end} was called. */
  get ended(): boolean {
    return this.#ended;
  }
}

/**
 * Remove the server's tree directory at exit, once every tree has been ended by its owner (a
 * tree still in use keeps it; the next server to start ends what a dead one left).
 */
export function closeTrees(): void {
  if (!base) return;
  for (const dir of pool.splice(0)) rmdir(dir);
  rmdir(base);
}
