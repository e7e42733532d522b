/**
 * The file group's view of libc (bound once, in `server/libc/`): descriptor-relative `*at`
 * calls, `openat2` with `RESOLVE_NO_SYMLINKS`, `statx` and directory reading, where Deno's
 * path-based file API cannot be race-free; null where unavailable (not Linux, no FFI
 * permission), and callers then fall back to path-based calls with identity checks. The
 * constants and errno names are those of Linux x86_64 and aarch64 (they agree on all of these).
 *
 * @module
 */

import { cString, errno, type Libc, libc, libcAvailable } from "../libc/index.ts";

export { cString, errno, type Libc };

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
  O_NONBLOCK: 0o4000,
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

/**
 * The library, or null where it cannot be used (not Linux, no FFI permission, no glibc).
 */
export function loadLibc(): Libc | null {
  return libcAvailable() ? libc() : null;
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
