/**
 * `pty_connect`: the WebSocket of a terminal, on the PTY port. Binary frames carry keystrokes in
 * and output out; text frames carry JSON control messages (`ready`, `resize`, `exit`, `error`,
 * `ping`/`pong`). The protocol is documented in `docs/server/terminal.md`; keep the two in step.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { EndReason, TerminalClient, TerminalExit } from "../../pty/session.ts";
import type { Terminal } from "../../pty/session.ts";
import type { WindowSize } from "../../pty/pair.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { ClientControl } from "./schema.ts";
import { findTerminal } from "./lookup.ts";
import { viewTerminal } from "./view.ts";

/** The subprotocol the server selects when the client offers it. */
export const PTY_SUBPROTOCOL = "sandbar.pty.v1";

/** Close code by why the terminal ended. */
const CLOSE_CODES: Readonly<Record<EndReason, number>> = {
  exit: 1000,
  deleted: 4001,
  idle_timeout: 4002,
  shutdown: 1001,
};

const encoder = new TextEncoder();

/** One WebSocket watching a terminal. */
class SocketClient implements TerminalClient {
  readonly #socket: WebSocket;

  constructor(socket: WebSocket) {
    this.#socket = socket;
  }

  get queued(): number {
    return this.#socket.bufferedAmount;
  }

  send(message: Record<string, unknown>): void {
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(JSON.stringify(message));
  }

  output(bytes: Uint8Array): void {
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(bytes);
  }

  resized(size: WindowSize): void {
    this.send({ type: "resize", cols: size.cols, rows: size.rows });
  }

  ended(exit: TerminalExit): void {
    this.send({
      type: "exit",
      exit_code: exit.exitCode,
      signal: exit.signal,
      reason: exit.reason,
    });
    this.drop(CLOSE_CODES[exit.reason], exit.reason);
  }

  drop(code: number, reason: string): void {
    if (this.#socket.readyState <= WebSocket.OPEN) this.#socket.close(code, reason);
  }
}

function control(terminal: Terminal, client: SocketClient, text: string): void {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    client.send({ type: "error", code: "invalid_request", error: "Text frames must be JSON" });
    return;
  }
  const parsed = ClientControl.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    client.send({ type: "error", code: "invalid_arguments", error: `${where}${issue.message}` });
    return;
  }
  const msg = parsed.data;
  if (msg.type === "ping") client.send({ type: "pong" });
  else if (msg.type === "resize") terminal.resize({ cols: msg.cols, rows: msg.rows });
  else input(terminal, client, encoder.encode(msg.data));
}

function input(terminal: Terminal, client: SocketClient, bytes: Uint8Array): void {
  // Input after the end is dropped quietly: the exit message is on its way.
  if (!terminal.write(bytes) && terminal.running) {
    client.send({
      type: "error",
      code: "payload_too_large",
      error: "Too much input is waiting for the terminal; this input was dropped",
    });
  }
}

/** The `pty_connect` handler. */
export const ptyConnect: EndpointHandler = (c) => {
  const terminal = findTerminal(c);
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError("invalid_request", "This endpoint is a WebSocket: send an upgrade request");
  }
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
  const { socket, response } = Deno.upgradeWebSocket(
    c.req.raw,
    offered.includes(PTY_SUBPROTOCOL) ? { protocol: PTY_SUBPROTOCOL } : {},
  );
  socket.binaryType = "arraybuffer";
  const client = new SocketClient(socket);
  const ptyUrl = c.var.state.addresses.ptyUrl;
  socket.onopen = () => {
    const replay = terminal.attach(client);
    client.send({ type: "ready", terminal: viewTerminal(terminal, ptyUrl), replay: replay.length });
    if (replay.length > 0) client.output(replay);
  };
  socket.onmessage = (e: MessageEvent) => {
    if (typeof e.data === "string") control(terminal, client, e.data);
    else input(terminal, client, new Uint8Array(e.data as ArrayBuffer));
  };
  socket.onclose = () => terminal.detach(client);
  return response;
};
