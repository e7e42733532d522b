/**
 * What {@linkcode ManagedProcess} needs from a started child, whichever way it was started: by
 * libc's `posix_spawn` over FFI (`native_child.ts`, the fast path) or by `Deno.Command` through
 * util-linux's `setsid` (`command_child.ts`, the fallback).
 *
 * @module
 */

import type { Spawner } from "../confine/spawner.ts";
import { libc, libcAvailable } from "../libc/index.ts";
import type { StreamName } from "./output.ts";

/** A listener for output as it is read. */
export type ChunkListener = (type: StreamName, bytes: Uint8Array) => void;

/** What to start: the program is the leader of a new session and process group. */
export interface ChildSpec {
  /** The program and its arguments; `argv[0]` is looked up on `env.PATH` unless it has a `/`. */
  argv: string[];
  /** Absolute working directory. */
  cwd: string;
  /** The complete environment (nothing is inherited). */
  env: Record<string, string>;
  /** A stdin pipe to write to; otherwise stdin is `/dev/null`. */
  stdin: boolean;
  /** `argv[0]` was just found on `PATH` (a path to an executable file): no second search. */
  located?: boolean;
  /** The confined thread to start it on (native spawns only); none: unconfined. */
  spawner?: Spawner;
}

/** How the leader ended, as `Deno.CommandStatus` says it. */
export interface ChildStatus {
  /** The exit status, or `128 + n` after signal n. */
  code: number;
  /** The signal that ended it, if one did and it has a name. */
  signal: Deno.Signal | null;
}

/** A started child. */
export interface SpawnedChild {
  /** The pid, also the process-group id. */
  readonly pid: number;
  /**
   * Resolves once the leader has exited and been reaped, after whatever it left running in its
   * group was sent `SIGKILL`.
   */
  readonly status: Promise<ChildStatus>;
  /** Resolves once stdout and stderr have both reached end of file (or broken). */
  readonly drained: Promise<void>;
  /** Whether stdin can still be written. */
  readonly stdinOpen: boolean;
  /** Write to stdin; resolves once the pipe took every byte, rejects when stdin is closed. */
  write(bytes: Uint8Array): Promise<void>;
  /**
   * Close stdin once what was written has gone into the pipe; with `discard`, at once, failing
   * writes still waiting for room.
   */
  closeStdin(discard?: boolean): Promise<void>;
  /**
   * Stop reading its output and let go of every descriptor held for it, so `drained` resolves
   * (the deadline passed while a runaway holds the pipes, or the server is stopping).
   */
  release(): void;
}

/** Linux signal numbers (x86_64 and the generic ABI) by name, for statuses read from `waitpid`. */
const SIGNAL_NAMES: readonly (Deno.Signal | undefined)[] = [
  undefined,
  "SIGHUP",
  "SIGINT",
  "SIGQUIT",
  "SIGILL",
  "SIGTRAP",
  "SIGABRT",
  "SIGBUS",
  "SIGFPE",
  "SIGKILL",
  "SIGUSR1",
  "SIGSEGV",
  "SIGUSR2",
  "SIGPIPE",
  "SIGALRM",
  "SIGTERM",
  "SIGSTKFLT",
  "SIGCHLD",
  "SIGCONT",
  "SIGSTOP",
  "SIGTSTP",
  "SIGTTIN",
  "SIGTTOU",
  "SIGURG",
  "SIGXCPU",
  "SIGXFSZ",
  "SIGVTALRM",
  "SIGPROF",
  "SIGWINCH",
  "SIGIO",
  "SIGPWR",
  "SIGSYS",
];

/**
 * A `waitpid` status word as a {@linkcode ChildStatus}.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeWaitStatus } from "./child.ts";
 * assert.deepEqual(decodeWaitStatus(3 << 8), { code: 3, signal: null }); // exit(3)
 * assert.deepEqual(decodeWaitStatus(9), { code: 137, signal: "SIGKILL" }); // killed by signal 9
 * ```
 */
export function decodeWaitStatus(status: number): ChildStatus {
  const signal = status & 0x7f;
  if (signal === 0) return { code: (status >> 8) & 0xff, signal: null };
  return { code: 128 + signal, signal: SIGNAL_NAMES[signal] ?? null };
}

/** Linux's `SIGKILL`, on every architecture. */
const SIGKILL = 9;

/**
 * `SIGKILL` to the group `pid` leads, if any member is left: through libc's `kill(2)` where it
 * can be (`Deno.kill` costs a permission check, and an error object when the group is already
 * empty), else through `Deno.kill`.
 */
export function killGroup(pid: number): void {
  if (libcAvailable()) {
    libc().kill(-pid, SIGKILL);
    return;
  }
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch { /* nobody left in the group */ }
}
