/**
 * A directory held open by descriptor, so that creating, renaming and unlinking inside it cannot
 * be redirected by a link swapped into its path after the guard looked. Deno's file API works by
 * path only, so this goes through libc (`Deno.dlopen`): the directory is opened with
 * `openat2(RESOLVE_NO_SYMLINKS)` (the kernel refuses with `ELOOP` if any component is a link at
 * that moment), and everything after is relative to that descriptor (`openat`, `renameat`,
 * `linkat`, `unlinkat`), so it all happens in that very directory.
 *
 * Where this is not available (not Linux, a kernel before 5.6, no FFI permission) `open`
 * returns null and callers fall back to path-based calls with identity checks.
 *
 * Synchronous calls run on the JavaScript thread so `errno` read right after them is theirs;
 * only `fdatasync`, which can take seconds on a large file, runs on the FFI pool.
 *
 * @module
 */

const SYMBOLS = {
  syscall: { parameters: ["i64", "i64", "buffer", "buffer", "usize"], result: "i64" },
  openat: { parameters: ["i32", "buffer", "i32", "u32"], result: "i32" },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  fdatasync: { parameters: ["i32"], result: "i32", nonblocking: true },
  fchmod: { parameters: ["i32", "u32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  renameat: { parameters: ["i32", "buffer", "i32", "buffer"], result: "i32" },
  linkat: { parameters: ["i32", "buffer", "i32", "buffer", "i32"], result: "i32" },
  unlinkat: { parameters: ["i32", "buffer", "i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

/** `openat2` has the same number on x86_64 and aarch64 (the generic table). */
const SYS_OPENAT2 = 437n;
const AT_FDCWD = -100;
const AT_REMOVEDIR = 0x200;
const O_WRONLY = 0o1;
const O_CREAT = 0o100;
const O_EXCL = 0o200;
const O_NOFOLLOW = 0o400000;
const O_CLOEXEC = 0o2000000;
const O_DIRECTORY = 0o200000;
const O_PATH = 0o10000000;
const RESOLVE_NO_MAGICLINKS = 0x02;
const RESOLVE_NO_SYMLINKS = 0x04;

const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  5: "EIO",
  13: "EACCES",
  17: "EEXIST",
  18: "EXDEV",
  20: "ENOTDIR",
  21: "EISDIR",
  22: "EINVAL",
  28: "ENOSPC",
  30: "EROFS",
  36: "ENAMETOOLONG",
  38: "ENOSYS",
  39: "ENOTEMPTY",
  40: "ELOOP",
  122: "EDQUOT",
};

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
let libc: Libc | null | undefined;

function load(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    libc = Deno.build.os === "linux" ? Deno.dlopen("libc.so.6", SYMBOLS).symbols : null;
  } catch {
    libc = null; // No FFI permission, or no glibc.
  }
  return libc;
}

function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** A libc failure, with `code` set to the errno's name (`ELOOP`, `EEXIST`…). */
export class PinnedDirectoryError extends Error {
  /** The errno name. */
  readonly code: string;

  /** An error for `call`, reading `errno` now unless given. */
  constructor(call: string, errno?: number) {
    const n = errno ?? currentErrno();
    const code = ERRNO_NAMES[n] ?? `errno ${n}`;
    super(`${call} failed: ${code}`);
    this.code = code;
  }
}

function currentErrno(): number {
  const p = load()?.__errno_location();
  return p ? new Deno.UnsafePointerView(p).getInt32() : 0;
}

/**
 * A directory opened by descriptor; operations inside it name entries by base name only.
 *
 * @example
 * ```ts ignore
 * const dir = PinnedDirectory.open("/workspace/out", true);
 * if (dir) {
 *   const fd = dir.createExclusive(".tmp-1", 0o644);
 *   dir.write(fd, new TextEncoder().encode("hi"));
 *   await dir.sync(fd);
 *   dir.closeFile(fd);
 *   dir.rename(".tmp-1", "hello.txt");
 *   dir.close();
 * }
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
   * kernel (`PinnedDirectoryError` with code `ELOOP`). Null when pinning is not available here.
   */
  static open(path: string, noSymlinks: boolean): PinnedDirectory | null {
    const lib = load();
    if (!lib) return null;
    const how = new BigUint64Array([
      BigInt(O_PATH | O_DIRECTORY | O_CLOEXEC),
      0n,
      BigInt(noSymlinks ? RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS : 0),
    ]);
    const fd = Number(
      lib.syscall(SYS_OPENAT2, BigInt(AT_FDCWD), cString(path), new Uint8Array(how.buffer), 24n),
    );
    if (fd < 0) {
      const errno = currentErrno();
      if (ERRNO_NAMES[errno] === "ENOSYS" || ERRNO_NAMES[errno] === "EPERM") return null;
      throw new PinnedDirectoryError(`openat2(${path})`, errno);
    }
    return new PinnedDirectory(lib, fd);
  }

  /** Create `name` with `O_EXCL | O_NOFOLLOW` for writing; returns its descriptor. */
  createExclusive(name: string, mode: number): number {
    const flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    const fd = this.#libc.openat(this.#fd, cString(name), flags, mode);
    if (fd < 0) throw new PinnedDirectoryError(`openat(${name})`);
    return fd;
  }

  /** Write all of `chunk` to a descriptor from {@linkcode createExclusive}. */
  write(fd: number, chunk: Uint8Array<ArrayBuffer>): void {
    let off = 0;
    while (off < chunk.byteLength) {
      const n = Number(this.#libc.write(fd, chunk.subarray(off), BigInt(chunk.byteLength - off)));
      if (n < 0) {
        const errno = currentErrno();
        if (errno === 4) continue; // EINTR
        throw new PinnedDirectoryError("write", errno);
      }
      off += n;
    }
  }

  /** Set a descriptor's permission bits. */
  chmod(fd: number, mode: number): void {
    if (this.#libc.fchmod(fd, mode) !== 0) throw new PinnedDirectoryError("fchmod");
  }

  /** `fdatasync`, off the JavaScript thread. */
  async sync(fd: number): Promise<void> {
    if ((await this.#libc.fdatasync(fd)) !== 0) throw new PinnedDirectoryError("fdatasync", 5);
  }

  /** Close a file descriptor. */
  closeFile(fd: number): void {
    this.#libc.close(fd);
  }

  /** `renameat` from this directory to `into` (default this one); replaces `to`. */
  rename(from: string, to: string, into: PinnedDirectory = this): void {
    if (this.#libc.renameat(this.#fd, cString(from), into.#fd, cString(to)) !== 0) {
      throw new PinnedDirectoryError(`renameat(${to})`);
    }
  }

  /** `linkat` from this directory to `into` (default this one): `EEXIST` rather than replace. */
  link(from: string, to: string, into: PinnedDirectory = this): void {
    if (this.#libc.linkat(this.#fd, cString(from), into.#fd, cString(to), 0) !== 0) {
      throw new PinnedDirectoryError(`linkat(${to})`);
    }
  }

  /** `unlinkat` of a file or a link (or, with `directory`, an empty directory) in here. */
  unlink(name: string, directory = false): void {
    if (this.#libc.unlinkat(this.#fd, cString(name), directory ? AT_REMOVEDIR : 0) !== 0) {
      throw new PinnedDirectoryError(`unlinkat(${name})`);
    }
  }

  /** Release the directory's descriptor. */
  close(): void {
    if (this.#fd >= 0) this.#libc.close(this.#fd);
    this.#fd = -1;
  }
}
