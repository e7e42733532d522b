/**
 * The cgroup a local sandbox's server ends its process trees with, handed to the server as a
 * directory descriptor named in `SANDBAR_WORK_FDS` beside `work`'s files (see
 * `cgroup_reserve.ts`). Inside the sandbox the cgroup file system is bound read-only, so without
 * it the server could end a tree only by session and descent, which misses a process that called
 * `setsid` after its parent exited (`server/process/trees.ts`).
 *
 * - **cgroup v1** (`trees1:<n>`): the sandbox's own cgroup in the `freezer` hierarchy; a tree's
 *   processes still go into `work` in the `pids` and `memory` hierarchies.
 * - **cgroup v2** (`trees2:<n>`): the sandbox's `work` cgroup, so that trees lie below it and
 *   `work`'s limits hold for them (a v2 process is in one cgroup only). The sandbox's cgroup
 *   namespace is then rooted at `work`: the entering shell puts the sandbox's first process in
 *   `work` for bubblewrap to unshare it there, and bubblewrap's script moves its init and itself
 *   to the `server` leaf through one more descriptor the host opened (`home:<n>`, that leaf's
 *   `cgroup.procs`) before the server starts (`cgroup.ts` `enterArgv`, `launch.ts`). Linux checks a
 *   move against the namespace of whoever opened the `cgroup.procs` written (`nsdelegate`,
 *   as systemd mounts cgroup2): through a file the server opens itself, both ends must lie in
 *   `work`; the host's `procs` and `home` files each lead to one cgroup of the sandbox only.
 *   And in the namespace's root (`work` itself) a process inside may write only `cgroup.procs`,
 *   `cgroup.threads` and `cgroup.subtree_control`: never `work`'s limits, `cgroup.kill` or
 *   `cgroup.freeze`.
 *
 * The descriptor is not opened on the directory itself, which would let `..` climb to the
 * host's whole hierarchy (a server taken over could then freeze or move any host process). It is
 * a detached copy of the mount at that directory (`open_tree` with `OPEN_TREE_CLONE`, root only):
 * the copy's top is that directory, and `..` there stays there. The supervisor makes it just
 * before it starts the sandbox, with no close-on-exec and a number from 10 up (the entering
 * shell's redirections take 3 to 9), and closes its own copy right after the start.
 *
 * @module
 */

import { join } from "node:path";
import type { CgroupRef } from "./cgroup.ts";

const SYS_OPEN_TREE = 428n; // the same on every architecture Deno runs on (Linux 5.2 on)
const OPEN_TREE_CLONE = 1n;
const OPEN_TREE_CLOEXEC = 0o2000000n;
const AT_FDCWD = -100n;
const F_DUPFD = 0;

const SYMBOLS = {
  syscall: { parameters: ["i64", "i64", "buffer", "u64"], result: "i64" },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>;

let lib: Libc | null | undefined;

function libc(): Libc | null {
  if (lib !== undefined) return lib;
  try {
    lib = Deno.dlopen("libc.so.6", SYMBOLS);
  } catch {
    lib = null;
  }
  return lib;
}

/** A descriptor the sandbox's first process inherits, and its name in `SANDBAR_WORK_FDS`. */
export interface TreeDelegation {
  /** The descriptor (10 or more, inherited by the next process this one starts). */
  fd: number;
  /** `trees1:<fd>` (v1) or `trees2:<fd>` (v2). */
  spec: string;
}

function errno(c: Libc): number {
  const at = c.symbols.__errno_location();
  return at === null ? 0 : new Deno.UnsafePointerView(at).getInt32();
}

/**
 * Open the sandbox's cgroup for its server's process trees (v1: its freezer cgroup; v2: its
 * `work` cgroup) as a detached mount; or why there is none to delegate (no libc, no v1 freezer,
 * no `work` on v2, `open_tree` refused: before Linux 5.2, or without `CAP_SYS_ADMIN`), for the
 * sandbox's log: its server then ends trees by session, and says so in its capabilities. Close
 * it with {@linkcode closeTreeDelegation} once the sandbox's first process has started.
 */
export function openTreeDelegation(ref: CgroupRef): TreeDelegation | { reason: string } {
  const dir = ref.version === 1 ? ref.dirs.freezer : join(ref.dirs.unified, "work");
  if (dir === undefined) return { reason: "the sandbox has no cgroup v1 freezer cgroup" };
  const c = libc();
  if (c === null) return { reason: "libc.so.6 could not be loaded" };
  const path = new TextEncoder().encode(`${dir}\0`);
  const tree = Number(
    c.symbols.syscall(SYS_OPEN_TREE, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
  );
  if (tree < 0) return { reason: `open_tree of ${dir} failed (errno ${errno(c)})` };
  // F_DUPFD leaves close-on-exec off on the copy: the next process started inherits it.
  const fd = c.symbols.fcntl(tree, F_DUPFD, 10);
  const failed = fd < 0 ? errno(c) : 0;
  c.symbols.close(tree);
  return fd < 0 ? { reason: `fcntl F_DUPFD failed (errno ${failed})` } : {
    fd,
    spec: `trees${ref.version}:${fd}`,
  };
}

/** Close this process's copy (the sandbox's server keeps its own). */
export function closeTreeDelegation(delegation: TreeDelegation | { reason: string } | null): void {
  if (delegation !== null && "fd" in delegation) libc()?.symbols.close(delegation.fd);
}
