/**
 * {@linkcode SandboxTerminal}: what `sandbox.getTerminal()` returns: a terminal opened on the
 * in-sandbox server and connected over its WebSocket. Closing it closes the terminal too (its
 * shell and everything the shell started), not only the connection.
 *
 * @module
 */

import type { ServerClient } from "../client/server_client.ts";
import type { PtyConnection } from "../client/pty_connection.ts";
import type { TerminalExit, TerminalSession } from "../models/pty.ts";

/**
 * An interactive terminal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * await using term = await sandbox.getTerminal({ cols: 100, rows: 30 });
 * term.send("echo $((6 * 7))\r");
 * await term.expect("42");
 * ```
 */
export class SandboxTerminal implements AsyncDisposable, AsyncIterable<Uint8Array> {
  /** The WebSocket connection (output, `expect`, `resize`, …). */
  readonly connection: PtyConnection;
  readonly #server: ServerClient;
  #closed: Promise<void> | undefined;

  /** Made by `Sandbox.getTerminal`. */
  constructor(server: ServerClient, connection: PtyConnection) {
    this.#server = server;
    this.connection = connection;
  }

  /** The terminal's id (`pty_…`). */
  get id(): string {
    return this.connection.id;
  }

  /** The terminal as the server described it at connect (size kept current). */
  get terminal(): TerminalSession {
    return this.connection.terminal;
  }

  /** Resolves when the shell ends (null when the connection closed first). */
  get exited(): Promise<TerminalExit | null> {
    return this.connection.exited;
  }

  /** Type text or bytes (`"\r"` is Enter, `"\x03"` Ctrl-C). */
  send(data: string | Uint8Array): void {
    this.connection.send(data);
  }

  /** Resize the terminal. */
  resize(cols: number, rows: number): void {
    this.connection.resize(cols, rows);
  }

  /** Wait for output matching `pattern` (ANSI sequences removed); returns it. */
  expect(pattern: string | RegExp, options: { timeout?: number } = {}): Promise<string> {
    return this.connection.expect(pattern, options);
  }

  /** Raw output bytes as they come. */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.connection[Symbol.asyncIterator]();
  }

  /** Close the connection and the terminal (its shell gets SIGHUP, then SIGKILL). */
  close(): Promise<void> {
    return this.#closed ??= (async () => {
      await this.connection.close();
      await this.#server.pty.delete(this.id).catch(() => {});
    })();
  }

  /** `await using` closes it. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
