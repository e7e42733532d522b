/**
 * The libc calls the file group needs where Deno's path-based file API cannot be race-free:
 * descriptor-relative `*at` calls, `openat2` with `RESOLVE_NO_SYMLINKS`, `statx` and directory
 * reading. Loaded once, on first use, through `Deno.dlopen`; null where unavailable (not Linux,
 * no FFI permission), and callers then fall back to path-based calls with identity checks.
 *
 * Synchronous calls run on the JavaScript thread, so `errno` read right after them is theirs;
 * only `fdatasync`, which can take seconds on a large file, runs on the FFI pool. Constants are
 * those of Linux x86_64 and aarch64 (they agree on all of these).
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
  mkdirat: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  statx: { parameters: ["i32", "buffer", "i32", "u32", "buffer"], result: "i32" },
  readlinkat: { parameters: ["i32", "buffer", "buffer", "usize"], result: "isize" },
  fdopendir: { parameters: ["i32"], result: "pointer" },
  readdir64: { parameters: ["pointer"], result: "pointer" },
  closedir: { parameters: ["pointer"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

/** `openat2` has the same number on x86_64 and aarch64 (the generic table). */
export const SYS_OPENAT2 = 437n;
/** Flags and constants of `open(2)`, `openat2(2)`, `statx(2)` and `unlinkat(2)`. */
export const C = {
  AT_FDCWD: -100,
  AT_REMOVEDIR: 0x200,
  AT_SYMLINK_NOFOLLOW: 0x100,
  AT_EMPTY_PATH: 0x1000,
  O_RDONLY: 0,
  O_WRONLY: 0o1,
  O_CREAT: 0o100,
  O_EXCL: 0o200,
  O_NOFOLLOW: 0o400000,
  O_CLOEXEC: 0o2000000,
  O_DIRECTORY: 0o200000,
  O_PATH: 0o10000000,
  RESOLVE_NO_MAGICLINKS: 0x02,
  RESOLVE_NO_SYMLINKS: 0x04,
  STATX_BASIC_STATS: 0x7ff,
} as const;

const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  4: "EINTR",
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

/** The loaded symbols. */
export type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
let libc: Libc | null | undefined;

/**
 * The library, or null where it cannot be used.
 *
 * @example
 * ```ts ignore
 * const lib = loadLibc();
 * if (lib) lib.close(fd);
 * ```
 */
export function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    libc = Deno.build.os === "linux" ? Deno.dlopen("libc.so.6", SYMBOLS).symbols : null;
  } catch {
    libc = null; // No FFI permission, or no glibc.
  }
  return libc;
}

/** A NUL-terminated copy of a string, for a `const char *`. */
export function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** `errno` of the last synchronous call on this thread. */
export function errno(): number {
  const p = loadLibc()?.__errno_location();
  return p ? new Deno.UnsafePointerView(p).getInt32() : 0;
}

/** The name of an errno value (`ELOOP`), or `errno <n>`. */
export function errnoName(n: number): string {
  return ERRNO_NAMES[n] ?? `errno ${n}`;
}

/** A libc failure, with `code` set to the errno's name (`ELOOP`, `EEXIST`…). */
export class LibcCallError extends Error {
  /** The errno name. */
  readonly code: string;

  /** An error for `call`, reading `errno` now unless given. */
  constructor(call: string, n?: number) {
    const code = errnoName(n ?? errno());
    super(`${call} failed: ${code}`);
    this.code = code;
  }
}
