/**
 * Keeping the server's secrets from the processes it starts. Those processes may run as the
 * same user as the server, and a same-user process can read another's `/proc/<pid>/environ`
 * (where the token the server started with still stands, whatever `unsetenv` did since) and
 * attach to it, unless the process is marked non-dumpable. `prctl(PR_SET_DUMPABLE, 0)` does
 * that: its `/proc` files become root's and ptrace is refused. It lasts until the process execs,
 * so the children the server starts are dumpable as usual.
 *
 * @module
 */

import { libc, libcAvailable } from "./libc/index.ts";

const PR_SET_DUMPABLE = 4;

/**
 * Mark this process non-dumpable. Returns false where that is not possible (not Linux, no FFI).
 */
export function hideFromSameUser(): boolean {
  if (Deno.build.os !== "linux" || !libcAvailable()) return false;
  return libc().prctl(PR_SET_DUMPABLE, 0n, 0n, 0n, 0n) === 0;
}

const F_GETFD = 1;
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/**
 * Mark every descriptor this process inherited (3 and up) close-on-exec, so that no process
 * the server starts, by any path (`posix_spawn`, `Deno.Command`, the terminals), receives one:
 * a launching shell may leave a secret open on descriptor 7 without `O_CLOEXEC`. The native
 * spawn also closes everything from 3 up in the child; this covers the other paths. Listed
 * through libc, as the narrowed server may not read `/proc/self/fd` itself. Returns how many
 * descriptors it marked.
 *
 * @example
 * ```ts ignore
 * import { closeInheritedOnExec } from "./hardening.ts";
 * closeInheritedOnExec();
 * ```
 */
export function closeInheritedOnExec(): number {
  if (Deno.build.os !== "linux" || !libcAvailable()) return 0;
  const c = libc();
  const dir = c.opendir(new TextEncoder().encode("/proc/self/fd\0"));
  if (dir === null) return 0;
  const fds: number[] = [];
  try {
    for (;;) {
      const entry = c.readdir(dir);
      if (entry === null) break;
      // struct dirent64: d_name at offset 19.
      const name = new Deno.UnsafePointerView(entry).getCString(19);
      if (/^\d+$/.test(name) && Number(name) > 2) fds.push(Number(name));
    }
  } finally {
    c.closedir(dir);
  }
  let marked = 0;
  for (const fd of fds) {
    const flags = c.fcntl(fd, F_GETFD, 0);
    if (flags >= 0 && !(flags & FD_CLOEXEC) && c.fcntl(fd, F_SETFD, flags | FD_CLOEXEC) === 0) {
      marked++;
    }
  }
  return marked;
}
