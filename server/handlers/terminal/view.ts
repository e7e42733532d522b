/**
 * The TerminalSession object of the wire (see `docs/server/terminal.md`).
 *
 * @module
 */

import type { Terminal } from "../../pty/session.ts";

/** A terminal as the endpoints and the WebSocket `ready` message describe it. */
export interface TerminalSessionView {
  /** `pty_` and 12 hex digits. */
  id: string;
  /** The shell's process id, which is also its session id. */
  pid: number;
  /** The program, as requested. */
  shell: string;
  /** Its arguments. */
  args: readonly string[];
  /** Absolute working directory. */
  cwd: string;
  /** Current columns. */
  cols: number;
  /** Current rows. */
  rows: number;
  /** `exited` once the shell has ended and its session is gone. */
  status: "running" | "exited";
  /** Exit code; null while running or when a signal ended the shell. */
  exit_code: number | null;
  /** The signal that ended the shell, or null. */
  signal: string | null;
  /** `exit`, `deleted`, `idle_timeout` or `shutdown`; null while running. */
  reason: string | null;
  /** WebSocket clients connected now. */
  clients: number;
  /** ISO 8601 creation time. */
  created_at: string;
  /** ISO 8601 time the shell ended, or null. */
  exited_at: string | null;
  /** Seconds with no client and no input before the terminal is closed. */
  idle_timeout: number;
  /** The WebSocket URL as the server sees itself. */
  connect_url: string;
}

/**
 * Describe a terminal; `ptyUrl` is the server's `ws://host:port`.
 */
export function viewTerminal(t: Terminal, ptyUrl: string): TerminalSessionView {
  const exited = t.exit !== null;
  return {
    id: t.options.id,
    pid: t.pid,
    shell: t.options.shell,
    args: t.options.args,
    cwd: t.options.cwd,
    cols: t.size.cols,
    rows: t.size.rows,
    status: exited ? "exited" : "running",
    exit_code: t.exit?.exitCode ?? null,
    signal: t.exit?.signal ?? null,
    reason: t.exit?.reason ?? null,
    clients: t.clientCount,
    created_at: t.createdAt.toISOString(),
    exited_at: t.endedAt?.toISOString() ?? null,
    idle_timeout: Math.round(t.options.idleTimeoutMs / 1000),
    connect_url: `${ptyUrl}/pty/${t.options.id}/connect`,
  };
}
