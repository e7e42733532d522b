/**
 * Models of the process group.
 *
 * @module
 */

/** The result of a command run to its end (`process.shell`, `process.runStream`). */
export interface ProcessResult {
  /** The process id it ran as. */
  pid: number | null;
  /** Standard output (its last `maxOutputBytes`). */
  stdout: string;
  /** Standard error (its last `maxOutputBytes`). */
  stderr: string;
  /** Exit code: 124 on timeout, 128 + n when signal n ended it. */
  exitCode: number;
  /** Seconds from start to exit. */
  executionTime: number;
  /** True when the command's own `timeout` killed it. */
  timedOut: boolean;
  /** The signal that ended it (`"SIGKILL"`), or null. */
  signal: string | null;
  /** Bytes dropped from the front of stdout. */
  stdoutDropped: number;
  /** Bytes dropped from the front of stderr. */
  stderrDropped: number;
  /** True when `exitCode` is 0. */
  success: boolean;
  /**
   * True when the kernel killed it for want of memory: the sandbox's memory limit was reached
   * (`commands.run` of a sandbox whose provider reports OOM kills; absent elsewhere).
   */
  oomKilled?: boolean;
}

/** `stdout`, `stderr` or `exit`. */
export type ProcessChunkType = "stdout" | "stderr" | "exit";

/** One piece of a running command's output, or its end. */
export interface ProcessChunk {
  /** `stdout`, `stderr`, or `exit` (always the last). */
  type: ProcessChunkType;
  /** The output text (empty for `exit`). */
  data: string;
  /** For `exit`: the exit code; else null. */
  exitCode: number | null;
  /** For `exit`: seconds from start to exit. */
  executionTime?: number;
  /** For `exit`: whether the timeout killed it. */
  timedOut?: boolean;
  /** For `exit`: the signal that ended it, or null. */
  signal?: string | null;
  /** For `process.follow`: the byte position of this chunk in the output. */
  offset?: number;
  /** For `process.follow`: bytes lost just before this chunk. */
  dropped?: number;
}

/** A process the server started (`process.start`, `list`, `get`). */
export interface ProcessInfo {
  /** Process id (also its process-group id). */
  pid: number;
  /** `background` (process.start) or `shell` (a running shell / shellStream). */
  kind: "background" | "shell";
  /** The tag given at start. */
  tag: string | null;
  /** The shell form, or null. */
  cmd: string | null;
  /** The exec form, or null. */
  argv: string[] | null;
  /** Absolute working directory. */
  cwd: string;
  /** When it started. */
  startedAt: Date | null;
  /** When it ended, or null. */
  endedAt: Date | null;
  /** Whether it is still running. */
  running: boolean;
  /** Exit code once exited (124 on timeout, 128 + n on a signal). */
  exitCode: number | null;
  /** The signal that ended it, or null. */
  signal: string | null;
  /** Whether its timeout killed it. */
  timedOut: boolean;
  /** Seconds so far, or until exit. */
  executionTime: number;
  /** Whether stdin can still be written. */
  stdinOpen: boolean;
  /** Bytes of output so far (both streams). */
  outputBytes: number;
  /** Bytes its output buffer dropped (oldest first). */
  droppedBytes: number;
}

/** Buffered output of a background process (`process.output`). */
export interface ProcessOutput {
  /** The process. */
  pid: number;
  /** Chunks from the asked offset, in order. */
  chunks: ProcessChunk[];
  /** The oldest position still buffered. */
  startOffset: number;
  /** Pass as `offset` next time to get only what is new. */
  nextOffset: number;
  /** Bytes between the asked offset and `startOffset` that are gone. */
  droppedBytes: number;
  /** Whether it is still running. */
  running: boolean;
  /** Exit code once exited. */
  exitCode: number | null;
}

/** The answer of `process.sendStdin` / `closeStdin`. */
export interface StdinResult {
  /** The process. */
  pid: number;
  /** Bytes written. */
  written: number;
  /** Whether stdin is still open. */
  stdinOpen: boolean;
}

/** The answer of `process.signal`. */
export interface SignalResult {
  /** The process. */
  pid: number;
  /** The signal sent, by name. */
  signal: string;
}
