/**
 * {@linkcode PtyConnection}: one WebSocket to a terminal (`docs/server/terminal.md`, frames):
 * keystrokes out as binary frames, output in as binary frames, control as JSON text frames.
 *
 * @module
 */

import { ConnectionError, TimeoutError } from "../errors/mod.ts";
import type { TerminalExit, TerminalSession } from "../models/pty.ts";
import { camelize } from "./wire.ts";

/** How much output a connection queues for its iterator before dropping the oldest. */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/** How much decoded text it keeps for {@linkcode PtyConnection.expect}. */
const MAX_TEXT = 1024 * 1024;

// deno-lint-ignore no-control-regex
const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g;

/** Terminal text without ANSI escape sequences. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

interface Waiter {
  pattern: string | RegExp;
  resolve: (text: string) => void;
  reject: (e: unknown) => void;
}

/**
 * A live connection to a terminal. Iterate it for raw output bytes, or use `expect` to wait
 * for text; `send` types, `resize` resizes; `exited` resolves when the shell ends.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * const term = await client.pty.create({ cols: 100, rows: 30 });
 * await using conn = await client.pty.connect(term.id);
 * conn.send("echo hello\r");
 * await conn.expect("hello");
 * conn.send("exit 3\r");
 * assert.equal((await conn.exited)?.exitCode, 3);
 * ```
 */
export class PtyConnection implements AsyncIterable<Uint8Array> {
  /** The terminal's id. */
  readonly id: string;
  /** The terminal as of the `ready` message, with the size kept current. */
  readonly terminal: TerminalSession;
  /** Scrollback bytes replayed at connect, before live output. */
  readonly replay: number;
  /** Resolves when the shell ends (null when the connection closed first). */
  readonly exited: Promise<TerminalExit | null>;
  /** Resolves when the WebSocket has closed, with its close code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>;

  readonly #ws: WebSocket;
  readonly #decoder = new TextDecoder();
  readonly #queue: Uint8Array[] = [];
  #queued = 0;
  #dropped = 0;
  #pull: (() => void) | undefined;
  #text = "";
  #waiters: Waiter[] = [];
  #ended = false;
  #resolveExit!: (exit: TerminalExit | null) => void;

  /** Made by `client.pty.connect`, after the `ready` message. */
  constructor(ws: WebSocket, ready: Record<string, unknown>) {
    this.#ws = ws;
    this.terminal = camelize<TerminalSession>(ready.terminal);
    this.id = this.terminal.id;
    this.replay = Number(ready.replay ?? 0);
    this.exited = new Promise((resolve) => (this.#resolveExit = resolve));
    this.closed = new Promise((resolve) => {
      ws.addEventListener("close", (e) => {
        this.#ended = true;
        this.#resolveExit(null);
        this.#pull?.();
        for (const w of this.#waiters.splice(0)) {
          w.reject(
            new ConnectionError(`Terminal ${this.id} connection closed (${e.code} ${e.reason})`, {
              suggestion: "The shell ended or the terminal was deleted; see `exited`.",
            }),
          );
        }
        resolve({ code: e.code, reason: e.reason });
      });
    });
    ws.addEventListener("message", (e) => this.#onMessage(e.data));
  }

  /** Output dropped from the iterator's queue because nobody read it (oldest first). */
  get droppedBytes(): number {
    return this.#dropped;
  }

  /** All output text seen and not yet consumed by `expect` (up to 1 MiB, ANSI kept). */
  get text(): string {
    return this.#text;
  }

  #onMessage(data: unknown): void {
    if (typeof data === "string") {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(data);
      } catch {
        return;
      }
      if (msg.type === "exit") {
        this.#resolveExit({
          exitCode: (msg.exit_code as number | null) ?? null,
          signal: (msg.signal as string | null) ?? null,
          reason: String(msg.reason),
        });
      } else if (msg.type === "resize") {
        this.terminal.cols = Number(msg.cols);
        this.terminal.rows = Number(msg.rows);
      }
      return;
    }
    const bytes = new Uint8Array(data as ArrayBuffer);
    this.#queue.push(bytes);
    this.#queued += bytes.byteLength;
    while (this.#queued > MAX_QUEUED_BYTES && this.#queue.length > 1) {
      const old = this.#queue.shift()!;
      this.#queued -= old.byteLength;
      this.#dropped += old.byteLength;
    }
    this.#pull?.();
    this.#text += this.#decoder.decode(bytes, { stream: true });
    if (this.#text.length > MAX_TEXT) this.#text = this.#text.slice(-MAX_TEXT);
    this.#checkWaiters();
  }

  #checkWaiters(): void {
    for (const w of [...this.#waiters]) {
      const plain = stripAnsi(this.#text);
      let end = -1;
      if (typeof w.pattern === "string") {
        const at = plain.indexOf(w.pattern);
        if (at >= 0) end = at + w.pattern.length;
      } else {
        const m = w.pattern.exec(plain);
        if (m) end = m.index + m[0].length;
      }
      if (end < 0) continue;
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      // Consume the matched text; what follows stays for the next expect.
      this.#text = plain.slice(end);
      w.resolve(plain.slice(0, end));
    }
  }

  /** Type: text (UTF-8) or raw bytes (`"\r"` is Enter, `"\x03"` Ctrl-C). */
  send(data: string | Uint8Array): void {
    this.#ws.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }

  /** Resize the terminal (the shell gets SIGWINCH). */
  resize(cols: number, rows: number): void {
    this.#ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  /**
   * Wait until the output (ANSI sequences removed) contains `pattern`; returns the text up to
   * the end of the match and consumes it. `timeout` in seconds (default 10).
   */
  expect(pattern: string | RegExp, options: { timeout?: number } = {}): Promise<string> {
    const timeout = options.timeout ?? 10;
    return new Promise<string>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter = {
        pattern,
        resolve: (t) => {
          clearTimeout(timer);
          resolve(t);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      if (this.#ended) {
        return reject(new ConnectionError(`Terminal ${this.id} connection is closed`));
      }
      this.#waiters.push(waiter);
      if (timeout > 0) {
        timer = setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          reject(
            new TimeoutError(
              `Terminal ${this.id}: ${String(pattern)} not seen within ${timeout} s; last ` +
                `output: ${JSON.stringify(stripAnsi(this.#text).slice(-200))}`,
            ),
          );
        }, timeout * 1000);
      }
      this.#checkWaiters();
    });
  }

  /** Raw output chunks, as they arrive, until the connection closes. */
  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    while (true) {
      const next = this.#queue.shift();
      if (next) {
        this.#queued -= next.byteLength;
        yield next;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#pull = resolve));
      this.#pull = undefined;
    }
  }

  /** Close this connection (the terminal keeps running; reconnect to see it again). */
  async close(): Promise<void> {
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) {
      this.#ws.close(1000, "client closed");
    }
    await this.closed;
  }

  /** `await using conn = await client.pty.connect(id)` closes it on scope exit. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
