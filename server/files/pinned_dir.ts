/**
 * A directory held open by descriptor, so that what happens inside it cannot be redirected by
 * a link swapped into its path after the guard looked. Deno's file API works by path only, so
 * this goes through libc (`./libc.ts`): the directory is opened with
 * `openat2(RESOLVE_NO_SYMLINKS)` (the kernel refuses with `ELOOP` if any component is a link at
 * that moment), and everything after is relative to that descriptor (`openat`, `renameat`,
 * `linkat`, `unlinkat`, `statx`, reading the directory, opening a child directory with
 * `O_NOFOLLOW`), so it all happens in that very directory.
 *
 * Where this is not available (not Linux, a kernel before 5.6, no FFI permission) `open`
 * returns null and callers fall back to path-based calls with identity checks.
 *
 * @module
 */

import {
  C,
  cString,
  errno,
  errnoName,
  type Libc,
  LibcCallError,
  loadLibc,
  SYS_OPENAT2,
} from "./libc.ts";
import { withheldTreeOf } from "./withheld.ts";

export { LibcCallError } from "./libc.ts";

/** What `statx` says of one entry (never following a final link). */
export interface EntryStat {
  /** Device, as `st_dev` (comparable with `Deno.FileInfo.dev`). */
  dev: number;
  /** Inode. */
  ino: number;
  /** Full mode, type bits included. */
  mode: number;
  /** Bytes. */
  size: number;
  /** Names of the file (hard links). */
  nlink: number;
  /** Last modification. */
  mtime: Date | null;
  /** What the entry itself is. */
  kind: "file" | "directory" | "symlink" | "other";
}

/**
 * An {@linkcode EntryStat} from a `Deno.FileInfo` (from `lstat`), for the path-based fallback.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { entryStatOf } from "./pinned_dir.ts";
 * assert.equal(entryStatOf(await Deno.lstat(Deno.cwd())).kind, "directory");
 * ```
 */
export function entryStatOf(info: Deno.FileInfo): EntryStat {
  return {
    dev: info.dev,
    ino: info.ino ?? 0,
    mode: info.mode ?? 0,
    size: info.size,
    nlink: info.nlink ?? 1,
    mtime: info.mtime,
    kind: info.isSymlink
      ? "symlink"
      : info.isDirectory
      ? "directory"
      : info.isFile
      ? "file"
      : "other",
  };
}

/** glibc's `makedev`, so `statx`'s major and minor compare with `st_dev`. */
function makedev(major: number, minor: number): number {
  const ma = BigInt(major);
  const mi = BigInt(minor);
  return Number(
    ((ma & 0xfffff000n) << 32n) | ((ma & 0xfffn) << 8n) | ((mi & 0xffffff00n) << 12n) |
      (mi & 0xffn),
  );
}

function parseStatx(buf: Uint8Array<ArrayBuffer>): EntryStat {
  const v = new DataView(buf.buffer);
  const mode = v.getUint16(28, true);
  const type = mode & 0o170000;
  const sec = Number(v.getBigInt64(112, true));
  const nsec = v.getUint32(120, true);
  return {
    dev: makedev(v.getUint32(136, true), v.getUint32(140, true)),
    ino: Number(v.getBigUint64(32, true)),
    mode,
    size: Number(v.getBigUint64(40, true)),
    nlink: v.getUint32(16, true),
    mtime: new Date(sec * 1000 + Math.floor(nsec / 1e6)),
    kind: type === 0o100000
      ? "file"
      : type === 0o040000
      ? "directory"
      : type === 0o120000
      ? "symlink"
      : "other",
  };
}

/** A file a descriptor-based read refused: not a regular file, a second name, or too large. */
export class UnreadableFileError extends Error {
  /** Why, as a word: `not_a_file`, `hard_link` or `too_large`. */
  readonly reason: "not_a_file" | "hard_link" | "too_large";
  /** Make the error. */
  constructor(reason: "not_a_file" | "hard_link" | "too_large", shown: string) {
    super(`${shown}: ${reason.replaceAll("_", " ")}`);
    this.name = "UnreadableFileError";
    this.reason = reason;
  }
}

/** The bytes of a regular file read through its descriptor, with what `statx` said of it. */
export interface FileBytes {
  /** Its content. */
  bytes: Uint8Array<ArrayBuffer>;
  /** The opened file itself (not a path's). */
  stat: EntryStat;
}

/** Open flags of a read: never a final link, never pending on a FIFO. */
const READ_FLAGS = C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | C.O_CLOEXEC;

/**
 * Read the regular file open on `fd` (closed after): refused unless `statx` of that very
 * descriptor says a regular file with one name (a second name may be one of a file outside the
 * tree, such as the store key) of at most `maxBytes`.
 */
function readOpenFile(lib: Libc, fd: number, shown: string, maxBytes: number): FileBytes {
  try {
    const buf = new Uint8Array(256);
    if (lib.statx(fd, cString(""), C.AT_EMPTY_PATH, C.STATX_BASIC_STATS, buf) !== 0) {
      throw new LibcCallError(`statx(${shown})`);
    }
    const stat = parseStatx(buf);
    if (stat.kind !== "file") throw new UnreadableFileError("not_a_file", shown);
    if (stat.nlink > 1) throw new UnreadableFileError("hard_link", shown);
    if (stat.size > maxBytes) throw new UnreadableFileError("too_large", shown);
    // One more byte than announced is room to see it grew past the limit meanwhile.
    let bytes = new Uint8Array(Math.min(stat.size, maxBytes) + 1);
    let off = 0;
    while (true) {
      if (off === bytes.length) {
        if (bytes.length > maxBytes) throw new UnreadableFileError("too_large", shown);
        const grown = new Uint8Array(Math.min(bytes.length * 2, maxBytes + 1));
        grown.set(bytes);
        bytes = grown;
      }
      const n = Number(lib.read(fd, bytes.subarray(off), BigInt(bytes.length - off)));
      if (n < 0) {
        const e = errno();
        if (errnoName(e) === "EINTR") continue;
        throw new LibcCallError(`read(${shown})`, e);
      }
      if (n === 0) break;
      off += n;
    }
    return { bytes: bytes.slice(0, off), stat: { ...stat, size: off } };
  } finally {
    lib.close(fd);
  }
}

/** Where the kernel says the file open on `fd` really is (`/proc/self/fd/N`), or null. */
function realPathOf(lib: Libc, fd: number): string | null {
  const buf = new Uint8Array(4096);
  const n = Number(
    lib.readlinkat(C.AT_FDCWD, cString(`/proc/self/fd/${fd}`), buf, BigInt(buf.length)),
  );
  return n < 0 ? null : new TextDecoder().decode(buf.subarray(0, n));
}

/** A descriptor that led into the server's own files (`./withheld.ts`): a refused link. */
export class WithheldFileError extends LibcCallError {
  /** Make the error (`code` is `ELOOP`, as for any refused link). */
  constructor(shown: string) {
    super(`open(${shown}): a link leads into the server's own files`, 40);
    this.name = "WithheldFileError";
  }
}

/**
 * Refuse (closing `fd`) a descriptor opened by following links when it is one of the server's
 * own files (`./withheld.ts`) or its real location cannot be told: {@linkcode WithheldFileError}
 * (`ELOOP`), so
 * every caller answers `symlink_denied` as for any other refused link.
 */
function refuseWithheld(lib: Libc, fd: number, shown: string): void {
  const real = realPathOf(lib, fd);
  if (real !== null && withheldTreeOf(real) === undefined) return;
  lib.close(fd);
  throw new WithheldFileError(shown);
}

/** `openat2(AT_FDCWD, path)`: the descriptor, or null where the kernel has no `openat2`. */
function openat2(lib: Libc, path: string, flags: number, resolve: number): number | null {
  const how = new BigUint64Array([BigInt(flags), 0n, BigInt(resolve)]);
  const fd = Number(
    lib.syscall(SYS_OPENAT2, BigInt(C.AT_FDCWD), cString(path), new Uint8Array(how.buffer), 24n),
  );
  if (fd >= 0) return fd;
  const n = errno();
  if (errnoName(n) === "ENOSYS" || errnoName(n) === "EPERM") return null;
  throw new LibcCallError(`openat2(${path})`, n);
}

/**
 * A directory opened by descriptor; operations inside it name entries by base name only.
 *
 * @example Writing a file by name inside the pinned directory
 * ```ts
 * import assert from "node:assert/strict";
 * import { PinnedDirectory } from "./pinned_dir.ts";
 * const path = await Deno.realPath(await Deno.makeTempDir());
 * const dir = PinnedDirectory.open(path, true)!;
 * const fd = dir.createExclusive(".tmp-1", 0o644);
 * dir.write(fd, new TextEncoder().encode("hi"));
 * dir.closeFile(fd);
 * dir.rename(".tmp-1", "hello.txt");
 * dir.close();
 * assert.equal(await Deno.readTextFile(`${path}/hello.txt`), "hi");
 * await Deno.remove(path, { recursive: true });
 * ```
 */
export class PinnedDirectory {
  readonly #libc: Libc;
  #fd: number;

  private constructor(lib: Libc, fd: number) {
    this.#libc = lib;
    this.#fd = fd;
  }

  /**
   * Open `path` (absolute). With `noSymlinks`, any link in any component is refused by the
   * kernel (`LibcCallError` with code `ELOOP`). Without it, links are followed, but never into
   * the server's own files (`./withheld.ts`; also `ELOOP`): the directory opened is checked by
   * where it really is. Null when pinning is not available here.
   */
  static open(path: string, noSymlinks: boolean): PinnedDirectory | null {
    const lib = loadLibc();
    if (!lib) return null;
    const resolve = noSymlinks ? C.RESOLVE_NO_SYMLINKS | C.RESOLVE_NO_MAGICLINKS : 0;
    const fd = openat2(lib, path, C.O_PATH | C.O_DIRECTORY | C.O_CLOEXEC, resolve);
    if (fd === null) return null;
    if (!noSymlinks) refuseWithheld(lib, fd, path);
    return new PinnedDirectory(lib, fd);
  }

  /**
   * What `path` leads to when links are followed (a final link too when `followFinal`), taken
   * from one descriptor so the description and the location are of the same file: its `statx`
   * and where it really is. `LibcCallError` `ELOOP` when that is one of the server's own files
   * (`./withheld.ts`), `ENOENT` when it is gone. Null when not available here.
   */
  static locate(path: string, followFinal: boolean): EntryStat | null {
    const lib = loadLibc();
    if (!lib) return null;
    const flags = C.O_PATH | C.O_CLOEXEC | (followFinal ? 0 : C.O_NOFOLLOW);
    const fd = openat2(lib, path, flags, 0);
    if (fd === null) return null;
    refuseWithheld(lib, fd, path);
    try {
      return new PinnedDirectory(lib, fd).stat();
    } finally {
      lib.close(fd);
    }
  }

  /**
   * `statx` of a path whose every component must not be a link (a final link is described, not
   * followed), taken in one kernel lookup. Null when not available here; `LibcCallError` with
   * `ELOOP` when a link is in the way, `ENOENT` when it is gone.
   */
  static statWithoutLinks(path: string): EntryStat | null {
    const lib = loadLibc();
    if (!lib) return null;
    const resolve = C.RESOLVE_NO_SYMLINKS | C.RESOLVE_NO_MAGICLINKS;
    const fd = openat2(lib, path, C.O_PATH | C.O_NOFOLLOW | C.O_CLOEXEC, resolve);
    if (fd === null) return null;
    try {
      return new PinnedDirectory(lib, fd).stat();
    } finally {
      lib.close(fd);
    }
  }

  /**
   * Read the regular file at `path` (absolute) through its descriptor, in one kernel lookup:
   * with `noSymlinks` a link in any component is refused (`LibcCallError` `ELOOP`), and a final
   * link always is. What is read is the file that was opened, whatever is swapped in after.
   * Null when descriptors are not available here (the caller must then refuse, not fall back
   * to a read by name). See {@linkcode readFile} for what is refused.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { PinnedDirectory } from "./pinned_dir.ts";
   * const dir = await Deno.realPath(await Deno.makeTempDir());
   * await Deno.writeTextFile(`${dir}/a.txt`, "hi");
   * await Deno.symlink(`${dir}/a.txt`, `${dir}/link`);
   * const read = PinnedDirectory.readWithoutLinks(`${dir}/a.txt`, 1024, true)!;
   * assert.equal(new TextDecoder().decode(read.bytes), "hi");
   * assert.throws(() => PinnedDirectory.readWithoutLinks(`${dir}/link`, 1024, true), /ELOOP/);
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  static readWithoutLinks(path: string, maxBytes: number, noSymlinks: boolean): FileBytes | null {
    const lib = loadLibc();
    if (!lib) return null;
    const resolve = noSymlinks ? C.RESOLVE_NO_SYMLINKS | C.RESOLVE_NO_MAGICLINKS : 0;
    const fd = openat2(lib, path, READ_FLAGS, resolve);
    if (fd === null) return null;
    if (!noSymlinks) refuseWithheld(lib, fd, path);
    return readOpenFile(lib, fd, path, maxBytes);
  }

  /**
   * Read the regular file `name` of this directory through its descriptor, never following a
   * link: refused (`UnreadableFileError`) when it is not a regular file (a FIFO is never waited
   * on), has a second name (a hard link), or holds more than `maxBytes`.
   */
  readFile(name: string, maxBytes: number): FileBytes {
    const fd = this.#libc.openat(this.#fd, cString(name), READ_FLAGS, 0);
    if (fd < 0) throw new LibcCallError(`openat(${name})`);
    return readOpenFile(this.#libc, fd, name, maxBytes);
  }

  /** A subdirectory, opened without following a link (`ELOOP` or `ENOTDIR` if it is one). */
  child(name: string): PinnedDirectory {
    const flags = C.O_PATH | C.O_DIRECTORY | C.O_NOFOLLOW | C.O_CLOEXEC;
    const fd = this.#libc.openat(this.#fd, cString(name), flags, 0);
    if (fd < 0) throw new LibcCallError(`openat(${name})`);
    return new PinnedDirectory(this.#libc, fd);
  }

  /** The names in this directory (without `.` and `..`), unsorted. */
  names(): string[] {
    const fd = this.#libc.openat(
      this.#fd,
      cString("."),
      C.O_RDONLY | C.O_DIRECTORY | C.O_CLOEXEC,
      0,
    );
    if (fd < 0) throw new LibcCallError("openat(.)");
    const dir = this.#libc.fdopendir(fd);
    if (dir === null) {
      const n = errno();
      this.#libc.close(fd);
      throw new LibcCallError("fdopendir", n);
    }
    const out: string[] = [];
    const decoder = new TextDecoder();
    try {
      while (true) {
        const entry = this.#libc.readdir64(dir);
        if (entry === null) break;
        const view = new Deno.UnsafePointerView(entry);
        const reclen = view.getUint16(16);
        const raw = new Uint8Array(view.getArrayBuffer(reclen - 19, 19));
        const end = raw.indexOf(0);
        const name = decoder.decode(end === -1 ? raw : raw.subarray(0, end));
        if (name !== "." && name !== "..") out.push(name);
      }
    } finally {
      this.#libc.closedir(dir); // closes fd too
    }
    return out;
  }

  /** `statx` of an entry, not following a final link; `""` for this directory itself. */
  stat(name = ""): EntryStat {
    const buf = new Uint8Array(256);
    const flags = C.AT_SYMLINK_NOFOLLOW | (name === "" ? C.AT_EMPTY_PATH : 0);
    if (this.#libc.statx(this.#fd, cString(name), flags, C.STATX_BASIC_STATS, buf) !== 0) {
      throw new LibcCallError(`statx(${name})`);
    }
    return parseStatx(buf);
  }

  /** The text of a link in this directory. */
  readLink(name: string): string {
    const buf = new Uint8Array(4096);
    const n = Number(this.#libc.readlinkat(this.#fd, cString(name), buf, BigInt(buf.length)));
    if (n < 0) throw new LibcCallError(`readlinkat(${name})`);
    return new TextDecoder().decode(buf.subarray(0, n));
  }

  /** Create `name` with `O_EXCL | O_NOFOLLOW` for writing; returns its descriptor. */
  createExclusive(name: string, mode: number): number {
    const flags = C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW | C.O_CLOEXEC;
    const fd = this.#libc.openat(this.#fd, cString(name), flags, mode);
    if (fd < 0) throw new LibcCallError(`openat(${name})`);
    return fd;
  }

  /** Write all of `chunk` to a descriptor from {@linkcode createExclusive}. */
  write(fd: number, chunk: Uint8Array<ArrayBuffer>): void {
    let off = 0;
    while (off < chunk.byteLength) {
      const n = Number(this.#libc.write(fd, chunk.subarray(off), BigInt(chunk.byteLength - off)));
      if (n < 0) {
        const e = errno();
        if (errnoName(e) === "EINTR") continue;
        throw new LibcCallError("write", e);
      }
      off += n;
    }
  }

  /** Set a descriptor's permission bits. */
  chmod(fd: number, mode: number): void {
    if (this.#libc.fchmod(fd, mode) !== 0) throw new LibcCallError("fchmod");
  }

  /** `fdatasync`, off the JavaScript thread. */
  async sync(fd: number): Promise<void> {
    if ((await this.#libc.fdatasync(fd)) !== 0) throw new LibcCallError("fdatasync", 5);
  }

  /** Close a file descriptor. */
  closeFile(fd: number): void {
    this.#libc.close(fd);
  }

  /** `renameat` from this directory to `into` (default this one); replaces `to`. */
  rename(from: string, to: string, into: PinnedDirectory = this): void {
    if (this.#libc.renameat(this.#fd, cString(from), into.#fd, cString(to)) !== 0) {
      throw new LibcCallError(`renameat(${to})`);
    }
  }

  /** `linkat` from this directory to `into` (default this one): `EEXIST` rather than replace. */
  link(from: string, to: string, into: PinnedDirectory = this): void {
    if (this.#libc.linkat(this.#fd, cString(from), into.#fd, cString(to), 0) !== 0) {
      throw new LibcCallError(`linkat(${to})`);
    }
  }

  /** `unlinkat` of a file or a link (or, with `directory`, an empty directory) in here. */
  unlink(name: string, directory = false): void {
    const flags = directory ? C.AT_REMOVEDIR : 0;
    if (this.#libc.unlinkat(this.#fd, cString(name), flags) !== 0) {
      throw new LibcCallError(`unlinkat(${name})`);
    }
  }

  /** `mkdirat`: a new directory in here (`EEXIST` if the name is taken). */
  mkdir(name: string, mode = 0o777): void {
    if (this.#libc.mkdirat(this.#fd, cString(name), mode) !== 0) {
      throw new LibcCallError(`mkdirat(${name})`);
    }
  }

  /** Release the directory's descriptor. */
  close(): void {
    if (this.#fd >= 0) this.#libc.close(this.#fd);
    this.#fd = -1;
  }
}
