/**
 * Reading `/proc` through libc. Deno refuses every `/proc` path to a process without
 * `--allow-all` ("Requires all access to /proc"), whatever `--allow-read` says, and the server
 * runs under narrowed permissions; FFI (which the terminals need anyway) is not subject to that
 * rule. Only what the session sweep needs: the process ids, and one small file of a process.
 *
 * @module
 */

import { closeFd, cString, libc, O_CLOEXEC, O_RDONLY } from "../libc/index.ts";

/** Offset of `d_name` in glibc's `struct dirent` on 64-bit Linux (ino 8, off 8, reclen 2, type 1). */
const D_NAME_OFFSET = 19;

/** The ids of every process, from the numeric entries of `/proc`. */
export function listProcessIds(): number[] {
  const c = libc();
  const dir = c.opendir(cString("/proc"));
  if (dir === null) return [];
  const pids: number[] = [];
  try {
    while (true) {
      const entry = c.readdir(dir);
      if (entry === null) break;
      const name = Deno.UnsafePointerView.getCString(entry, D_NAME_OFFSET);
      if (/^\d+$/.test(name)) pids.push(Number(name));
    }
  } finally {
    c.closedir(dir);
  }
  return pids;
}

/** A small `/proc` file (up to 4 KiB) as text, or undefined when it cannot be read. */
export function readProcFile(path: string): string | undefined {
  const c = libc();
  const fd = c.open(cString(path), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return undefined;
  try {
    const buf = new Uint8Array(4096);
    const n = Number(c.read(fd, buf, BigInt(buf.length)));
    return n < 0 ? undefined : new TextDecoder().decode(buf.subarray(0, n));
  } finally {
    closeFd(fd);
  }
}
