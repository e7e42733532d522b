/**
 * Models of the terminal group.
 *
 * @module
 */

/** A terminal on the server. */
export interface TerminalSession {
  /** `pty_` and 12 hex digits. */
  id: string;
  /** The shell's process id. */
  pid: number;
  /** The program started. */
  shell: string;
  /** Its arguments. */
  args: string[];
  /** Absolute working directory. */
  cwd: string;
  /** Columns. */
  cols: number;
  /** Rows. */
  rows: number;
  /** `running` or `exited`. */
  status: "running" | "exited";
  /** The shell's exit code, or null. */
  exitCode: number | null;
  /** The signal that ended it, or null. */
  signal: string | null;
  /** Why it ended: `exit`, `deleted`, `idle_timeout`, `shutdown`; null while running. */
  reason: string | null;
  /** WebSocket clients connected now. */
  clients: number;
  /** When it was created. */
  createdAt: string;
  /** When it ended, or null. */
  exitedAt: string | null;
  /** Seconds without client and input before it is closed. */
  idleTimeout: number;
  /** The WebSocket URL as the server sees itself. */
  connectUrl: string;
}

/** How a terminal's shell ended (`PtyConnection.exited`). */
export interface TerminalExit {
  /** Exit code, or null when a signal ended it. */
  exitCode: number | null;
  /** The signal, or null. */
  signal: string | null;
  /** `exit`, `deleted`, `idle_timeout` or `shutdown`. */
  reason: string;
}
