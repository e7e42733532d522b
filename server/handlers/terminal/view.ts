/**
 * The TerminalSession object of the wire (see `docs/server/terminal.md`).
 *
 * @module
 */

import type { Terminal } from "../../pty/session.ts";

/** A terminal as the endpoints and the WebSocket `ready` message describe it. */
export interface TerminalSessionView {
  id: string;
  pid: number;
  shell: string;
  args: readonly string[];
  cwd: string;
  cols: number;
  rows: number;
  status: "running" | "exited";
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  clients: number;
  created_at: string;
  exited_at: string | null;
  idle_timeout: number;
  connect_url: string;
}

/**
 * Describe a terminal; `ptyUrl` is the server's `ws://host:port`.
 *
 * @example
 * ```ts ignore
 * c.json(viewTerminal(terminal, c.var.state.addresses.ptyUrl));
 * ```
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
