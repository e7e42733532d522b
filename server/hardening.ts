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
