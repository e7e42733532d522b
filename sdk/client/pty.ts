/**
 * `client.pty`: the terminal group (`docs/server/terminal.md`).
 *
 * @module
 */

import { ConnectionError, errorFromResponse, ValidationError } from "../errors/mod.ts";
import type { TerminalSession } from "../models/pty.ts";
import { PtyConnection } from "./pty_connection.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";
import { camelize } from "./wire.ts";

/** Options of `pty.create`. */
export interface PtyCreateOptions extends CallOptions {
  /** Columns (default 80). */
  cols?: number;
  /** Rows (default 24). */
  rows?: number;
  /** The program (default `/bin/bash`); must pass the command rules. */
  shell?: string;
  /** Its arguments. */
  args?: string[];
  /** Working directory (default the server's root). */
  cwd?: string;
  /** Environment variables added (`TERM=xterm-256color` unless set here). */
  env?: Record<string, string>;
  /** Seconds without a client and without input before the terminal is closed (default 900). */
  idleTimeout?: number;
}

/** Options of `pty.connect`. */
export interface PtyConnectOptions {
  /** Seconds to wait for the connection and its `ready` message (default: the client's timeout). */
  timeout?: number;
  /** Aborts the connection attempt. */
  signal?: AbortSignal;
}

const SUBPROTOCOL = "sandbar.pty.v1";

function toSession(raw: unknown): TerminalSession {
  return camelize<TerminalSession>(raw);
}

/**
 * The terminal group: create, list, get, resize, delete, and connect (a WebSocket
 * {@linkcode PtyConnection} on the PTY port).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * const term = await client.pty.create({ cols: 120, rows: 40 });
 * assert.deepEqual([term.cols, term.rows], [120, 40]);
 * assert.ok((await client.pty.list()).some((t) => t.id === term.id));
 * await client.pty.delete(term.id);
 * ```
 */
export class PtyApi {
  readonly #t: ServerTransport;
  readonly #ptyUrl: string | null;
  readonly #token: string | null;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport, ptyUrl: string | null, token: string | null) {
    this.#t = transport;
    this.#ptyUrl = ptyUrl;
    this.#token = token;
  }

  /** Open a terminal with a shell on it. */
  async create(options: PtyCreateOptions = {}): Promise<TerminalSession> {
    return toSession(
      await this.#t.json("pty_create", {
        ...callRequest(options),
        json: {
          cols: options.cols ?? 80,
          rows: options.rows ?? 24,
          shell: options.shell,
          args: options.args,
          cwd: options.cwd,
          env: options.env,
          idle_timeout: options.idleTimeout,
        },
      }),
    );
  }

  /** This identity's terminals (oldest first). */
  async list(options: CallOptions = {}): Promise<TerminalSession[]> {
    const body = await this.#t.json<{ terminals: unknown[] }>("pty_list", callRequest(options));
    return body.terminals.map(toSession);
  }

  /** One terminal; `ServerNotFoundError` for an unknown id. */
  async get(id: string, options: CallOptions = {}): Promise<TerminalSession> {
    return toSession(await this.#t.json("pty_get", { ...callRequest(options), params: { id } }));
  }

  /** Resize a terminal. */
  async resize(
    id: string,
    cols: number,
    rows: number,
    options: CallOptions = {},
  ): Promise<TerminalSession> {
    return toSession(
      await this.#t.json("pty_resize", {
        ...callRequest(options),
        params: { id },
        json: { cols, rows },
      }),
    );
  }

  /** Close a terminal: its whole session is hung up and killed. Returns its final state. */
  async delete(id: string, options: CallOptions = {}): Promise<TerminalSession> {
    return toSession(
      await this.#t.json("pty_delete", { ...callRequest(options), params: { id } }),
    );
  }

  /** The WebSocket URL of a terminal. */
  connectUrl(id: string): string {
    if (!this.#ptyUrl) {
      throw new ValidationError("This client has no PTY URL", {
        suggestion: "Pass ptyUrl to new ServerClient(url, { ptyUrl: 'ws://host:9001' }).",
      });
    }
    return `${this.#ptyUrl}/pty/${encodeURIComponent(id)}/connect`;
  }

  /**
   * Connect to a terminal's WebSocket; resolves once the server's `ready` message arrived (the
   * scrollback replay follows as output). Refusals raise the same errors as HTTP calls.
   */
  async connect(id: string, options: PtyConnectOptions = {}): Promise<PtyConnection> {
    this.#t.preflight("pty_connect");
    const url = this.connectUrl(id);
    const headers = this.#t.headers();
    // Deno's WebSocket takes headers (the gateway's X-Access-Token travels there); a browser's
    // does not, so elsewhere the token goes in a subprotocol entry, which the PTY port accepts.
    const ws = "Deno" in globalThis
      ? new WebSocket(url, { protocols: [SUBPROTOCOL], headers } as unknown as string[])
      : new WebSocket(
        url,
        this.#token ? [SUBPROTOCOL, `sandbar.bearer.${this.#token}`] : [SUBPROTOCOL],
      );
    ws.binaryType = "arraybuffer";
    const seconds = options.timeout ?? this.#t.timeout;
    let ready: Record<string, unknown>;
    try {
      ready = await waitForReady(ws, seconds, options.signal);
    } catch (e) {
      try {
        ws.close();
      } catch { /* not open */ }
      throw await this.#diagnose(id, url, headers, e);
    }
    const connection = new PtyConnection(ws, ready);
    const untrack = this.#t.track(() => ws.close(1000, "client closed"));
    connection.closed.then(untrack);
    return connection;
  }

  /**
   * Why a WebSocket failed: the WebSocket API hides the HTTP answer, so ask the same route
   * without an upgrade (the pipeline answers it the same way), then the terminal itself.
   */
  async #diagnose(id: string, url: string, headers: Headers, cause: unknown): Promise<unknown> {
    if (!(cause instanceof ConnectionError) || cause.cause === "closed") return cause;
    try {
      const res = await fetch(url.replace(/^ws/, "http"), {
        headers,
        signal: AbortSignal.timeout(5000),
      });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch { /* not JSON */ }
      const error = errorFromResponse(res.status, body, res.headers, "pty_connect");
      if (error.serverCode !== "invalid_request") return error; // auth, admission, limits
      await this.get(id); // throws ServerNotFoundError for an unknown terminal
    } catch (e) {
      if (!(e instanceof TypeError)) return e;
    }
    return cause;
  }
}

/** The `ready` message of a new connection, or a ConnectionError / TimeoutError. */
function waitForReady(
  ws: WebSocket,
  seconds: number,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (fn: () => void) => {
      clearTimeout(timer);
      ws.removeEventListener("message", onMessage);
      ws.removeEventListener("close", onClose);
      ws.removeEventListener("error", onError);
      signal?.removeEventListener("abort", onAbort);
      fn();
    };
    const onMessage = (e: MessageEvent) => {
      if (typeof e.data !== "string") return;
      try {
        const msg = JSON.parse(e.data);
        if (msg.type === "ready") finish(() => resolve(msg));
      } catch { /* not a control message */ }
    };
    const onError = () =>
      finish(() =>
        reject(new ConnectionError(`WebSocket to ${ws.url} failed`, { cause: "error" }))
      );
    const onClose = (e: CloseEvent) =>
      finish(() =>
        reject(
          new ConnectionError(`WebSocket to ${ws.url} closed before ready (${e.code})`, {
            cause: e.code === 1006 ? "error" : "closed",
          }),
        )
      );
    const onAbort = () => finish(() => reject(signal?.reason));
    ws.addEventListener("message", onMessage);
    ws.addEventListener("close", onClose);
    ws.addEventListener("error", onError);
    signal?.addEventListener("abort", onAbort);
    if (seconds > 0) {
      timer = setTimeout(
        () =>
          finish(() =>
            reject(
              new ConnectionError(`No ready message from ${ws.url} within ${seconds} s`, {
                cause: "closed",
              }),
            )
          ),
        seconds * 1000,
      );
    }
  });
}
