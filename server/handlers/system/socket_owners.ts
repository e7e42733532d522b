/**
 * Which process holds each socket: the links in `/proc/<pid>/fd` read by the server itself,
 * through libc (Deno refuses to read `/proc` without `--allow-all`, which the narrowed server
 * does not have). No child process is involved: reading those links is a ptrace access, which
 * Landlock refuses from inside any confinement to a process outside it, so a confined helper
 * would see no owner at all, and an unconfined one would be the one process the server starts
 * outside the kernel's rules.
 *
 * The scan yields to the event loop every {@linkcode PROCESSES_PER_TURN} processes, so a machine
 * with thousands of them does not stall other requests.
 *
 * @module
 */

import { listNames } from "../../confine/fs_probe.ts";
import { cString, libc, libcAvailable } from "../../libc/index.ts";

const PROCESSES_PER_TURN = 64;
const AT_FDCWD = -100;

const decoder = new TextDecoder();

/**
 * The pid holding each socket inode of `inodes` (the first one found, when several share it);
 * inodes no visible process holds are left out. Empty where libc cannot be reached.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { socketOwners } from "./socket_owners.ts";
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const local = `0100007F:${listener.addr.port.toString(16).toUpperCase().padStart(4, "0")}`;
 * const row = Deno.readTextFileSync("/proc/net/tcp").split("\n").find((l) => l.includes(local))!;
 * const inode = row.trim().split(/\s+/)[9];
 * assert.equal((await socketOwners(new Set([inode]))).get(inode), Deno.pid);
 * listener.close();
 * ```
 */
export async function socketOwners(inodes: ReadonlySet<string>): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  if (inodes.size === 0 || Deno.build.os !== "linux" || !libcAvailable()) return found;
  const c = libc();
  const link = new Uint8Array(64);
  const pids = (listNames("/proc") ?? []).filter((n) => /^\d+$/.test(n));
  for (let i = 0; i < pids.length && found.size < inodes.size; i++) {
    if (i > 0 && i % PROCESSES_PER_TURN === 0) await new Promise((r) => setTimeout(r, 0));
    const dir = `/proc/${pids[i]}/fd`;
    for (const fd of listNames(dir) ?? []) {
      const n = Number(c.readlinkat(AT_FDCWD, cString(`${dir}/${fd}`), link, BigInt(link.length)));
      if (n <= 0) continue;
      const m = /^socket:\[(\d+)\]$/.exec(decoder.decode(link.subarray(0, n)));
      if (m && inodes.has(m[1]) && !found.has(m[1])) found.set(m[1], Number(pids[i]));
    }
  }
  return found;
}
