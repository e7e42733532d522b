/**
 * Looking at the file system through libc rather than Deno's API: the confinement is planned
 * by a server that runs under narrowed Deno permissions (it may not read `/usr` or `/etc`
 * itself), and a Landlock rule needs to know only what a path is, not what it holds.
 *
 * @module
 */

import { cString, libc } from "../libc/index.ts";

const AT_FDCWD = -100;
const AT_SYMLINK_NOFOLLOW = 0x100;
const AT_EMPTY_PATH = 0x1000;
const STATX_TYPE = 0x1;
const STATX_BYTES = 256;
const STX_MODE_OFFSET = 0x1c;
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;

/** What a path is. */
export type PathKind = "dir" | "file" | "link" | "other";

function modeKind(mode: number): PathKind {
  const t = mode & S_IFMT;
  return t === S_IFDIR ? "dir" : t === S_IFLNK ? "link" : t === S_IFREG ? "file" : "other";
}

/** What `path` is (a symbolic link itself unless `follow`), or null when it does not exist. */
export function pathKind(path: string, follow = true): PathKind | null {
  const buf = new Uint8Array(STATX_BYTES);
  const flags = follow ? 0 : AT_SYMLINK_NOFOLLOW;
  if (libc().statx(AT_FDCWD, cString(path), flags, STATX_TYPE, buf) !== 0) return null;
  return modeKind(new DataView(buf.buffer).getUint16(STX_MODE_OFFSET, true));
}

/** What the open descriptor `fd` is. */
export function fdKind(fd: number): PathKind | null {
  const buf = new Uint8Array(STATX_BYTES);
  if (libc().statx(fd, cString(""), AT_EMPTY_PATH, STATX_TYPE, buf) !== 0) return null;
  return modeKind(new DataView(buf.buffer).getUint16(STX_MODE_OFFSET, true));
}

/** Whether `path` exists (following links). */
export function exists(path: string): boolean {
  return pathKind(path) !== null;
}

/** The names in directory `path` (without `.` and `..`), or null when it cannot be read. */
export function listNames(path: string): string[] | null {
  const c = libc();
  const dir = c.opendir(cString(path));
  if (dir === null) return null;
  const names: string[] = [];
  try {
    for (;;) {
      const entry = c.readdir(dir);
      if (entry === null) break;
      // struct dirent64: d_ino, d_off (8 bytes each), d_reclen (2), d_type (1), d_name.
      const name = new Deno.UnsafePointerView(entry).getCString(19);
      if (name !== "." && name !== "..") names.push(name);
    }
  } finally {
    c.closedir(dir);
  }
  return names;
}

/** A whole file as text (read in pieces: `/proc` files give a page a read), or null. */
function readAll(path: string): string | null {
  const c = libc();
  const fd = c.open(cString(path), 0o2000000, 0);
  if (fd < 0) return null;
  try {
    const decoder = new TextDecoder();
    const buf = new Uint8Array(65536);
    let text = "";
    for (;;) {
      const got = Number(c.read(fd, buf, BigInt(buf.length)));
      if (got < 0) return null;
      if (got === 0) return text + decoder.decode();
      text += decoder.decode(buf.subarray(0, got), { stream: true });
    }
  } finally {
    c.close(fd);
  }
}

function isUnder(path: string, tree: string): boolean {
  return path === tree || path.startsWith(tree === "/" ? "/" : tree + "/");
}

/**
 * Whether nothing under `path` can be written whatever the file rules say: the mount that holds
 * it is read-only, and so is every mount below it (`/proc/self/mountinfo`, each mount's own
 * options). False when that cannot be told.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { onReadOnlyMount } from "./fs_probe.ts";
 * assert.equal(onReadOnlyMount(Deno.makeTempDirSync()), false);
 * ```
 */
export function onReadOnlyMount(path: string): boolean {
  const text = readAll("/proc/self/mountinfo");
  if (text === null) return false;
  const mounts = text.split("\n").filter(Boolean).map((line) => {
    const f = line.split(" ");
    const point = f[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    return { point, readOnly: f[5].split(",").includes("ro") };
  });
  // The last mount listed on a point is the one on top.
  let holder: { point: string; readOnly: boolean } | undefined;
  for (const m of mounts) {
    if (isUnder(path, m.point) && (!holder || m.point.length >= holder.point.length)) holder = m;
  }
  if (!holder?.readOnly) return false;
  return mounts.every((m) => m.readOnly || !isUnder(m.point, path) || m.point === holder.point);
}

/** The first `n` bytes of a file as text, or "" when it cannot be read. */
export function head(path: string, n = 256): string {
  const c = libc();
  const fd = c.open(cString(path), 0o2000000, 0);
  if (fd < 0) return "";
  try {
    const buf = new Uint8Array(n);
    const got = Number(c.read(fd, buf, BigInt(n)));
    return got > 0 ? new TextDecoder().decode(buf.subarray(0, got)) : "";
  } finally {
    c.close(fd);
  }
}
