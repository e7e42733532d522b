/**
 * The few file calls process trees make on a cgroup file system, through libc: Deno refuses
 * `/proc` to a process without `--allow-all` and the server runs under narrowed permissions
 * (see `pty/procfs.ts`), and a cgroup file is written with one `write` whose result is the
 * kernel's answer (a refused move is a failed `write`, not a failed `open`).
 *
 * @module
 */

import { cString, errno, libc, O_CLOEXEC, O_RDONLY } from "../libc/index.ts";

const AT_FDCWD = -100;
const AT_REMOVEDIR = 0x200;
const O_WRONLY = 1;
/** `errno` values a caller looks at. */
export const EEXIST = 17;
/** No such file or directory. */
export const ENOENT = 2;

/**
 * Write `text` to the file at `path` in one `write`: 0 when the kernel took it all, else the
 * `errno` of the `open` or the `write`.
 */
export function writeCgroupFile(path: string, text: string): number {
  const c = libc();
  const fd = c.open(cString(path), O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return errno() || -1;
  try {
    const bytes = new TextEncoder().encode(text);
    const n = Number(c.write(fd, bytes, BigInt(bytes.length)));
    return n === bytes.length ? 0 : (n < 0 ? errno() || -1 : -1);
  } finally {
    c.close(fd);
  }
}

/** Open a cgroup file for writing (closed on exec): its descriptor, or -1. */
export function openCgroupFile(path: string): number {
  const fd = libc().open(cString(path), O_WRONLY | O_CLOEXEC, 0);
  return fd < 0 ? -1 : fd;
}

/** Close descriptors of {@linkcode openCgroupFile} (-1 is skipped). */
export function closeCgroupFiles(...fds: number[]): void {
  for (const fd of fds) if (fd >= 0) libc().close(fd);
}

/** A file of `/sys` or `/proc`, whole, or null when it cannot be read. */
export function readCgroupFile(path: string): string | null {
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

/** Make the directory (a cgroup); true when made or already there. */
export function makeCgroupDir(path: string): boolean {
  return libc().mkdirat(AT_FDCWD, cString(path), 0o700) === 0 || errno() === EEXIST;
}

/** Remove an empty cgroup directory; true when removed or already gone. */
export function removeCgroupDir(path: string): boolean {
  return libc().unlinkat(AT_FDCWD, cString(path), AT_REMOVEDIR) === 0 || errno() === ENOENT;
}

/** Whether a file is there (a cgroup file such as `cgroup.kill`, which older kernels lack). */
export function cgroupFileExists(path: string): boolean {
  return libc().access(cString(path), 0 /* F_OK */) === 0;
}

/** The names of the subdirectories of a cgroup directory (its child cgroups). */
export function childCgroups(path: string): string[] {
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
