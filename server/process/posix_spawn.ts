/**
 * Starting a program with libc's `posix_spawn` over FFI as the leader of a new session and
 * process group (`POSIX_SPAWN_SETSID`, glibc 2.26), which `Deno.Command` cannot do without
 * either forking the whole runtime (`detached`) or starting util-linux's `setsid` first. glibc's
 * `posix_spawn` is a `clone(CLONE_VM | CLONE_VFORK)` and one `exec`, and it reports a failed
 * `chdir` or `exec` as its return value.
 *
 * The child gets: descriptors 0, 1 and 2 from `dup2` file actions, and no other (a
 * `closefrom(3)` file action, glibc 2.34, closes even a descriptor the server inherited without
 * `O_CLOEXEC` from whoever started it); the working directory from
 * `posix_spawn_file_actions_addchdir_np` (glibc 2.29); exactly the given environment; an empty
 * signal mask and every signal at its default action (Deno ignores `SIGPIPE`, and an ignored
 * signal would stay ignored across `exec`: `yes | head -1` would never end `yes` by `SIGPIPE`).
 *
 * The program is found as `execvp` would: a name with a `/` as is (relative to `cwd`), else on
 * the `PATH` of the child's environment, and a file the kernel will not execute (`ENOEXEC`, a
 * script without `#!`) is run by `/bin/sh`.
 *
 * @module
 */

import {
  EACCES,
  ENOENT,
  ENOEXEC,
  ENOTDIR,
  libc,
  LibcError,
  O_RDONLY,
  POSIX_SPAWN_SETSID,
  POSIX_SPAWN_SETSIGDEF,
  POSIX_SPAWN_SETSIGMASK,
} from "../libc/index.ts";
import type { Spawner } from "../confine/spawner.ts";
import { ApiError } from "../errors.ts";
import { locateProgram, searchDirs } from "./locate_program.ts";

/** What the child's descriptors 0, 1 and 2 are. */
export interface ChildStdio {
  /** The child's stdin, or `null` for `/dev/null`. */
  stdin: number | null;
  /** The child's stdout. */
  stdout: number;
  /** The child's stderr. */
  stderr: number;
}

/** `posix_spawnattr_t` is 336 bytes, `posix_spawn_file_actions_t` 80, `sigset_t` 128 (glibc). */
const ATTR_BYTES = 512;
const FILE_ACTIONS_BYTES = 256;
const SIGSET_BYTES = 128;

/** `access(2)`: may execute. */
const X_OK = 1;

/** The shell `execvp` runs a script without `#!` with. */
const SCRIPT_SHELL = "/bin/sh";

const encoder = new TextEncoder();

/** Whether this libc has every call the native path needs; the answer of the first ask. */
let supported: boolean | undefined;

/**
 * Whether processes can be started natively here: Linux, a libc with `posix_spawn`,
 * `POSIX_SPAWN_SETSID`, `addchdir_np` and `waitid`, FFI allowed,
 * and not turned off with `SANDBAR_PROCESS_SPAWN=command`.
 */
export function nativeSpawnSupported(): boolean {
  if (supported !== undefined) return supported;
  supported = false;
  try {
    if (Deno.build.os !== "linux") return false;
    if (Deno.env.get("SANDBAR_PROCESS_SPAWN") === "command") return false;
    const c = libc();
    const needed = [
      c.posix_spawn,
      c.posix_spawnattr_init,
      c.posix_spawnattr_setflags,
      c.posix_spawnattr_setsigmask,
      c.posix_spawnattr_setsigdefault,
      c.posix_spawn_file_actions_init,
      c.posix_spawn_file_actions_destroy,
      c.posix_spawn_file_actions_adddup2,
      c.posix_spawn_file_actions_addopen,
      c.posix_spawn_file_actions_addchdir_np,
      c.sigemptyset,
      c.sigfillset,
      c.waitid,
    ];
    if (needed.some((f) => f === null)) return false;
    // A libc without POSIX_SPAWN_SETSID refuses the flag.
    spawnAttributes();
    return (supported = true);
  } catch {
    // No --allow-ffi, no libc.so.6 (musl): the Deno.Command path.
    return false;
  }
}

let attributes: Uint8Array<ArrayBuffer> | undefined;

/** The spawn attributes every child gets; made once, only read by `posix_spawn`. */
function spawnAttributes(): Uint8Array<ArrayBuffer> {
  if (attributes) return attributes;
  const c = libc();
  const attr = new Uint8Array(ATTR_BYTES);
  const none = new Uint8Array(SIGSET_BYTES);
  const all = new Uint8Array(SIGSET_BYTES);
  c.sigemptyset!(none);
  c.sigfillset!(all);
  const failed = c.posix_spawnattr_init!(attr) ||
    c.posix_spawnattr_setflags!(
      attr,
      POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF,
    ) ||
    c.posix_spawnattr_setsigmask!(attr, none) ||
    c.posix_spawnattr_setsigdefault!(attr, all);
  if (failed) throw new LibcError("posix_spawnattr", failed);
  return (attributes = attr);
}

/**
 * The NULL-terminated `char *[]` of `strings`, with the strings themselves after the pointers
 * in the same buffer, so passing the array keeps the strings alive through the call. Throws a
 * `TypeError` for a string with a NUL byte, which C would cut short.
 *
 * One `encodeInto` of the joined strings: a spawn passes the whole environment, and encoding
 * each variable on its own cost about four times as much.
 */
function cStringArray(strings: readonly string[]): BigUint64Array<ArrayBuffer> {
  for (const s of strings) {
    if (s.includes("\0")) throw new TypeError("a NUL byte in an argument, cwd or environment");
  }
  const joined = strings.join("\0") + "\0";
  const table = 8 * (strings.length + 1);
  // Three UTF-8 bytes at most for each UTF-16 unit.
  const bytes = new Uint8Array(table + joined.length * 3);
  const { written } = encoder.encodeInto(joined, bytes.subarray(table));
  const pointers = new BigUint64Array(bytes.buffer, 0, strings.length + 1);
  if (strings.length === 0) return pointers;
  // Userspace addresses fit in 47 bits, well inside a double's exact integers.
  const base = Number(Deno.UnsafePointer.value(Deno.UnsafePointer.of(bytes))) + table;
  let i = 0;
  pointers[i++] = BigInt(base);
  // Each NUL but the last ends one string and starts the next (none has a NUL of its own).
  for (let at = 0; at < written - 1; at++) {
    if (bytes[table + at] === 0) pointers[i++] = BigInt(base + at + 1);
  }
  return pointers;
}

/** A spawn failure as the `Deno.errors` class `Deno.Command` would throw. */
function spawnError(code: number, program: string): Error {
  const reason = new LibcError("posix_spawn", code).message;
  const message = `${reason}: ${program}`;
  if (code === ENOENT) return new Deno.errors.NotFound(message);
  if (code === EACCES) return new Deno.errors.PermissionDenied(message);
  if (code === ENOTDIR) return new Deno.errors.NotADirectory(message);
  return Object.assign(new Error(message), { errno: code });
}

/** One `posix_spawn`: the pid, or the errno. */
function spawnOnce(
  path: string,
  argv: readonly string[],
  envp: BigUint64Array,
  cwd: Uint8Array,
  stdio: ChildStdio,
  spawner?: Spawner,
): { pid: number } | { errno: number } {
  const c = libc();
  const actions = new Uint8Array(FILE_ACTIONS_BYTES);
  const init = c.posix_spawn_file_actions_init!(actions);
  if (init !== 0) return { errno: init };
  try {
    const devNull = encoder.encode("/dev/null\0");
    // dup2 clears O_CLOEXEC on the target; the sources are >= 3 (Rust's runtime keeps 0-2 open).
    const failed = (stdio.stdin === null
      ? c.posix_spawn_file_actions_addopen!(actions, 0, devNull, O_RDONLY, 0)
      : c.posix_spawn_file_actions_adddup2!(actions, stdio.stdin, 0)) ||
      c.posix_spawn_file_actions_adddup2!(actions, stdio.stdout, 1) ||
      c.posix_spawn_file_actions_adddup2!(actions, stdio.stderr, 2) ||
      c.posix_spawn_file_actions_addchdir_np!(actions, cwd) ||
      (c.posix_spawn_file_actions_addclosefrom_np
        ? c.posix_spawn_file_actions_addclosefrom_np(actions, 3)
        : 0);
    if (failed) {
      return { errno: failed };
    }
    const file = encoder.encode(path + "\0");
    const pid = new Int32Array(1);
    const args = cStringArray(argv);
    const r = spawner
      ? spawner.posixSpawn(pid, file, actions, spawnAttributes(), args, envp)
      : c.posix_spawn!(pid, file, actions, spawnAttributes(), args, envp);
    return r === 0 ? { pid: pid[0] } : { errno: r };
  } finally {
    c.posix_spawn_file_actions_destroy!(actions);
  }
}

/**
 * Start `argv` as a session and group leader with the given descriptors as its 0, 1 and 2;
 * returns its pid. Throws `Deno.errors.NotFound` (no such program, or no `cwd`),
 * `Deno.errors.PermissionDenied`, or an `Error` with an `errno`. With `located`, `argv[0]` is a
 * path the caller has just found on `PATH`, and is not looked up again.
 */
export function spawnLeader(
  argv: readonly string[],
  cwd: string,
  env: Record<string, string>,
  stdio: ChildStdio,
  located = false,
  spawner?: Spawner,
): number {
  // Before the PATH search, which would look for the name cut at the NUL.
  for (const s of [...argv, cwd]) {
    if (s.includes("\0")) throw new TypeError("a NUL byte in an argument, cwd or environment");
  }
  const envp = cStringArray(Object.entries(env).map(([k, v]) => `${k}=${v}`));
  const cwdBytes = encoder.encode(cwd + "\0");
  const name = argv[0];
  const run = (path: string) => {
    const r = spawnOnce(path, argv, envp, cwdBytes, stdio, spawner);
    if (!("errno" in r) || r.errno !== ENOEXEC) return r;
    const script = [SCRIPT_SHELL, path, ...argv.slice(1)];
    return spawnOnce(SCRIPT_SHELL, script, envp, cwdBytes, stdio, spawner);
  };
  const found = located ? name : locateProgram(name, cwd, env.PATH);
  if (found === null) throw new Deno.errors.NotFound(`${name} not found`);
  // Where the server may not look into a PATH directory, try each as execvp does.
  const candidates = found !== undefined || name.includes("/")
    ? [found ?? name]
    : searchDirs(env.PATH, cwd).map((dir) => `${dir}/${name}`);
  // A confined child may not execute what the server found first (a PATH directory outside
  // what it may run, such as a shim in a home directory): go on along PATH, as execvp does
  // after EACCES.
  const bare = located ? name.slice(name.lastIndexOf("/") + 1) : name;
  if (spawner && !bare.includes("/") && candidates.length === 1) {
    for (const dir of searchDirs(env.PATH, cwd)) {
      const path = `${dir}/${bare}`;
      if (path !== candidates[0]) candidates.push(path);
    }
  }
  let denied = false;
  let last = ENOENT;
  for (const path of candidates) {
    const r = run(path);
    if ("pid" in r) return r.pid;
    last = r.errno;
    if (r.errno === EACCES) denied = true;
    else if (r.errno !== ENOENT && r.errno !== ENOTDIR) break;
  }
  const code = denied && (last === ENOENT || last === ENOTDIR) ? EACCES : last;
  if (spawner && code === EACCES) {
    // The server itself may execute it: the confinement refused, not the file's mode.
    const executable = candidates.some((p) => libc().access(encoder.encode(p + "\0"), X_OK) === 0);
    if (executable) {
      throw new ApiError(
        "process_denied",
        `${name}: executing it is outside what processes may run here (paths.allow, allow_commands)`,
        { param: "argv" },
      );
    }
  }
  throw spawnError(code, name);
}
