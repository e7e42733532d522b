/**
 * The few libc calls the server makes itself, through one `Deno.dlopen` of libc: the
 * pseudo-terminals' (Deno has no pty API and `Deno.Command` cannot hand a child an arbitrary
 * descriptor, so a terminal's master side lives here as a raw descriptor), the process
 * group's (`posix_spawn` with `POSIX_SPAWN_SETSID`, pipes, `waitid`, `waitpid`), which
 * `Deno.Command` has no option for, the file group's descriptor-relative `*at` calls, and
 * `prctl` for the server's own hardening.
 *
 * Every call but `poll` and `fdatasync` is synchronous: they run on the JavaScript thread, never block (the
 * descriptors are `O_NONBLOCK`, `waitpid` is only asked with `WNOHANG`, `posix_spawn` returns
 * once the child has called `exec`), and so `errno` read right after them is theirs. `poll` is
 * declared `nonblocking` (it runs on Deno's FFI worker pool and returns a Promise); a pending
 * one keeps the event loop alive, so every loop that polls owns a wake-up pipe that ends it.
 *
 * The process group's symbols are `optional` (null where this libc lacks them, musl or a glibc
 * before 2.29 for `posix_spawn_file_actions_addchdir_np`), so a
 * missing one turns that path off instead of failing the terminals' `dlopen`.
 *
 * Linux x86_64 and aarch64 constants (glibc and the generic ABI agree on these two).
 *
 * @module
 */

/** `open(2)` and `posix_openpt(3)` flags. */
export const O_RDWR = 0o2;
/** Do not make the opened terminal our controlling terminal. */
export const O_NOCTTY = 0o400;
/** Reads and writes return `EAGAIN` instead of blocking. */
export const O_NONBLOCK = 0o4000;
/** Closed in children on exec: a shell must never inherit the master side. */
export const O_CLOEXEC = 0o2000000;

/** Open read-only. */
export const O_RDONLY = 0;

/** `errno` values the shim tells apart. */
export const EINTR = 4;
/** No such file or directory. */
export const ENOENT = 2;
/** No such process. */
export const ESRCH = 3;
/** Not an executable format (a script without `#!`). */
export const ENOEXEC = 8;
/** No such child (already reaped). */
export const ECHILD = 10;
/** Permission denied. */
export const EACCES = 13;
/** A path component is not a directory. */
export const ENOTDIR = 20;
/** Broken pipe: the reading side is closed. */
export const EPIPE = 32;
/** The other side of the terminal is gone. */
export const EIO = 5;
/** Nothing to read, or no room to write, right now. */
export const EAGAIN = 11;

/** `poll(2)` event bits. */
export const POLLIN = 0x1;
/** Room to write. */
export const POLLOUT = 0x4;
/** An error condition. */
export const POLLERR = 0x8;
/** Hang-up: no slave side is open. */
export const POLLHUP = 0x10;

/** `fcntl(2)` commands: get and set the file status flags (`O_NONBLOCK`). */
export const F_GETFL = 3;
/** Set the file status flags. */
export const F_SETFL = 4;

/** `waitpid(2)`: return at once when the child has not exited. */
export const WNOHANG = 1;

/** `posix_spawnattr_setflags(3)`: reset the signals of the default set to `SIG_DFL`. */
export const POSIX_SPAWN_SETSIGDEF = 0x04;
/** Set the child's signal mask. */
export const POSIX_SPAWN_SETSIGMASK = 0x08;
/** Make the child the leader of a new session and process group (glibc 2.26). */
export const POSIX_SPAWN_SETSID = 0x80;

/** `ioctl(2)` requests for the window size (`struct winsize`). */
export const TIOCGWINSZ = 0x5413n;
/** Set the window size; the kernel sends `SIGWINCH` to the foreground process group. */
export const TIOCSWINSZ = 0x5414n;

import { lazyLibc } from "./lazy.ts";

const SYMBOLS = {
  posix_openpt: { parameters: ["i32"], result: "i32" },
  grantpt: { parameters: ["i32"], result: "i32" },
  unlockpt: { parameters: ["i32"], result: "i32" },
  ptsname_r: { parameters: ["i32", "buffer", "usize"], result: "i32" },
  // Variadic in C; the third argument is a pointer for the window-size requests, and passing a
  // buffer where the ABI expects the first variadic word works on x86_64 and aarch64.
  ioctl: { parameters: ["i32", "u64", "buffer"], result: "i32" },
  open: { parameters: ["buffer", "i32", "u32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
  pipe2: { parameters: ["buffer", "i32"], result: "i32" },
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
  access: { parameters: ["buffer", "i32"], result: "i32" },
  opendir: { parameters: ["buffer"], result: "pointer" },
  readdir: { parameters: ["pointer"], result: "pointer" },
  closedir: { parameters: ["pointer"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
  strerror: { parameters: ["i32"], result: "pointer" },
  // Variadic in C; F_GETFL/F_SETFL take an int, passed like a fixed one on x86_64 and aarch64.
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  waitpid: { parameters: ["i32", "buffer", "i32"], result: "i32" },
  kill: { parameters: ["i32", "i32"], result: "i32" },
  // The process group's: opaque attribute and file-action objects live in caller buffers.
  posix_spawn: {
    parameters: ["buffer", "buffer", "buffer", "buffer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  posix_spawnattr_init: { parameters: ["buffer"], result: "i32", optional: true },
  posix_spawnattr_destroy: { parameters: ["buffer"], result: "i32", optional: true },
  posix_spawnattr_setflags: { parameters: ["buffer", "i16"], result: "i32", optional: true },
  posix_spawnattr_setsigmask: { parameters: ["buffer", "buffer"], result: "i32", optional: true },
  posix_spawnattr_setsigdefault: {
    parameters: ["buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  posix_spawn_file_actions_init: { parameters: ["buffer"], result: "i32", optional: true },
  posix_spawn_file_actions_destroy: { parameters: ["buffer"], result: "i32", optional: true },
  posix_spawn_file_actions_adddup2: {
    parameters: ["buffer", "i32", "i32"],
    result: "i32",
    optional: true,
  },
  posix_spawn_file_actions_addopen: {
    parameters: ["buffer", "i32", "buffer", "i32", "u32"],
    result: "i32",
    optional: true,
  },
  posix_spawn_file_actions_addchdir_np: {
    parameters: ["buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // glibc 2.34: close every descriptor from N up in the child, whatever its O_CLOEXEC.
  posix_spawn_file_actions_addclosefrom_np: {
    parameters: ["buffer", "i32"],
    result: "i32",
    optional: true,
  },
  sigemptyset: { parameters: ["buffer"], result: "i32", optional: true },
  sigfillset: { parameters: ["buffer"], result: "i32", optional: true },
  // idtype_t, id_t, siginfo_t *, options: a look at a child's exit without reaping it.
  waitid: { parameters: ["i32", "u32", "buffer", "i32"], result: "i32", optional: true },
  // The file group's descriptor-relative calls (server/files/): race-free where Deno's
  // path-based API is not. `fdatasync` can take seconds on a large file, so it runs on the pool.
  syscall: { parameters: ["i64", "i64", "buffer", "buffer", "usize"], result: "i64" },
  openat: { parameters: ["i32", "buffer", "i32", "u32"], result: "i32" },
  fdatasync: { parameters: ["i32"], result: "i32", nonblocking: true },
  fchmod: { parameters: ["i32", "u32"], result: "i32" },
  renameat: { parameters: ["i32", "buffer", "i32", "buffer"], result: "i32" },
  linkat: { parameters: ["i32", "buffer", "i32", "buffer", "i32"], result: "i32" },
  unlinkat: { parameters: ["i32", "buffer", "i32"], result: "i32" },
  mkdirat: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  statx: { parameters: ["i32", "buffer", "i32", "u32", "buffer"], result: "i32" },
  readlinkat: { parameters: ["i32", "buffer", "buffer", "usize"], result: "isize" },
  fdopendir: { parameters: ["i32"], result: "pointer" },
  readdir64: { parameters: ["pointer"], result: "pointer" },
  // Variadic in C; PR_SET_DUMPABLE takes longs (server/confine/hardening.ts).
  prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
  // A static: Deno gives the variable's address (a `char ***`), not its value.
  environ: { type: "pointer" },
} as const;

/** The opened library: its symbols. */
export type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

let library: Deno.DynamicLibrary<typeof SYMBOLS> | undefined;

/**
 * libc, opened on first use and kept for the life of the process (closing it while a `poll` is
 * in flight would unmap code another thread is running).
 */
export function libc(): Libc {
  library ??= Deno.dlopen("libc.so.6", SYMBOLS);
  return library.symbols;
}

/**
 * Some of the symbols above, bound on first use in a library of their own, or null where libc
 * cannot be opened (off Linux, no glibc, no `--allow-ffi`). Binding the whole table costs a
 * process ~10 ms of its start (measured in a CPU profile of the launcher); a process that only
 * hardens itself and starts another (the server's launcher) binds just what it calls.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { libcPart } from "./index.ts";
 * const part = libcPart(["close"]);
 * const symbols = part();
 * if (symbols) assert.equal(symbols.close(-1), -1); // a bad descriptor
 * assert.equal(part(), symbols); // bound once
 * ```
 */
export function libcPart<K extends keyof typeof SYMBOLS>(
  names: readonly K[],
): () => Pick<Libc, K> | null {
  const part = Object.fromEntries(names.map((n) => [n, SYMBOLS[n]])) as Pick<typeof SYMBOLS, K>;
  return lazyLibc(part) as () => Pick<Libc, K> | null;
}

let loadable: boolean | undefined;

/**
 * Whether libc can be opened here (Linux with glibc, and `--allow-ffi`); asked once.
 */
export function libcAvailable(): boolean {
  if (loadable !== undefined) return loadable;
  try {
    libc();
    return (loadable = true);
  } catch {
    return (loadable = false);
  }
}

/** `errno` of the last synchronous call on this thread. */
export function errno(): number {
  const p = libc().__errno_location();
  return p === null ? 0 : new Deno.UnsafePointerView(p).getInt32();
}

/** A libc failure with its `errno`, named after the call that failed. */
export class LibcError extends Error {
  /** The errno value. */
  readonly errno: number;

  /** An error for `call`, with the current `errno` unless given. */
  constructor(call: string, code: number = errno()) {
    const text = libc().strerror(code);
    const reason = text === null ? `errno ${code}` : Deno.UnsafePointerView.getCString(text);
    super(`${call} failed: ${reason}`);
    this.name = "LibcError";
    this.errno = code;
  }
}

/** A string as a NUL-terminated buffer for a `char *` parameter. */
export function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** Close a descriptor, ignoring errors (it is ours, and only closed once). */
export function closeFd(fd: number): void {
  if (fd >= 0) libc().close(fd);
}
