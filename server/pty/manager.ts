/**
 * The terminals of one server: a long-lived service (`state.service("terminals", ...)`) that
 * starts, finds, lists and ends them, keeps an ended one around briefly so a late client still
 * gets its last output and exit status, and on `close()` ends every terminal so the server
 * exits with no shell, no pending FFI call and no descriptor left.
 *
 * @module
 */

import { type EndReason, Terminal, type TerminalOptions } from "./session.ts";

/** How many terminals may run at once on one server. */
export const MAX_RUNNING_TERMINALS = 64;
/** How long an ended terminal stays listed. */
export const EXITED_RETENTION_MS = 60_000;
/** Scrollback kept per terminal. */
export const SCROLLBACK_BYTES = 256 * 1024;

/** Thrown by {@linkcode TerminalManager.start} when {@linkcode MAX_RUNNING_TERMINALS} run. */
export class TooManyTerminalsError extends Error {
  /** An error naming the limit. */
  constructor() {
    super(`${MAX_RUNNING_TERMINALS} terminals are already running`);
    this.name = "TooManyTerminalsError";
  }
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `pty_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The terminal service.
 */
export class TerminalManager {
  readonly #terminals = new Map<string, Terminal>();
  readonly #forget = new Map<string, ReturnType<typeof setTimeout>>();
  #closing = false;

  /** Start a terminal. */
  start(options: Omit<TerminalOptions, "id" | "scrollbackBytes">): Terminal {
    if (this.#closing) throw new Error("the server is shutting down");
    let running = 0;
    for (const t of this.#terminals.values()) if (t.running) running++;
    if (running >= MAX_RUNNING_TERMINALS) throw new TooManyTerminalsError();
    let id = newId();
    while (this.#terminals.has(id)) id = newId();
    const terminal = Terminal.start({ ...options, id, scrollbackBytes: SCROLLBACK_BYTES });
    terminal.onEnded = () => {
      if (this.#closing || this.#terminals.get(id) !== terminal) return;
      this.#forget.set(id, setTimeout(() => this.#drop(id), EXITED_RETENTION_MS));
    };
    this.#terminals.set(id, terminal);
    return terminal;
  }

  /** A terminal of `owner`, or undefined (another identity's terminal is not found either). */
  get(id: string, owner: string): Terminal | undefined {
    const t = this.#terminals.get(id);
    return t && t.options.owner === owner ? t : undefined;
  }

  /** The terminals of `owner`, oldest first. */
  list(owner: string): Terminal[] {
    return [...this.#terminals.values()].filter((t) => t.options.owner === owner);
  }

  /** End a terminal and forget it; resolves when its processes and descriptors are gone. */
  async remove(terminal: Terminal, reason: EndReason = "deleted"): Promise<void> {
    await terminal.end(reason);
    this.#drop(terminal.options.id);
  }

  #drop(id: string): void {
    clearTimeout(this.#forget.get(id));
    this.#forget.delete(id);
    this.#terminals.delete(id);
  }

  /** End every terminal (quickly: a short grace) and forget them all. */
  async close(): Promise<void> {
    this.#closing = true;
    const all = [...this.#terminals.values()];
    await Promise.allSettled(all.map((t) => t.end("shutdown", 500)));
    for (const id of [...this.#terminals.keys()]) this.#drop(id);
  }
}
