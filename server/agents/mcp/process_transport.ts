/**
 * An MCP stdio transport over the server's own process layer. The SDK's
 * `StdioClientTransport` spawns with `node:child_process` on its own; a server started that way
 * would skip the process table (so `GET /process` would not show it and server shutdown would
 * not kill it) and any confinement the process layer applies. Here the server is spawned by
 * the process table like a `/process/start` child: as the leader of its own process group,
 * listed under the owning identity with the tag `mcp:<server_label>`, and killed with the
 * server. Its stdin and stdout carry newline-delimited JSON-RPC, framed by the SDK's own
 * `serializeMessage` and `deserializeMessage`.
 *
 * @module
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { TailBuffer } from "../../../shared/tail_buffer.ts";
import type { ExitInfo, ManagedProcess, SpawnRequest } from "../../process/process_group.ts";
import { processTable } from "../../process/table.ts";
import type { ServerState } from "../../state.ts";

/** Longest line (one JSON-RPC message) accepted from a server: more closes the connection. */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** How much of a server's stderr is kept to explain its failure. */
const STDERR_TAIL_BYTES = 2048;

/** How long `close()` waits after closing stdin, then after `SIGTERM`, before `SIGKILL`. */
const CLOSE_GRACE_MS = 1000;

/**
 * How long a failed write waits for the process's exit status. A killed server breaks its
 * stdin pipe before its death is reaped and its output drained; waiting a moment lets the
 * caller hear why it died (`killed by SIGKILL`) rather than which pipe noticed first.
 */
const EXIT_GRACE_MS = 2000;

const NEWLINE = 0x0a;

/** A transport whose far end is a process in the server's process table. */
export class ProcessStdioTransport implements Transport {
  /** Set by the SDK's client. */
  onclose?: () => void;
  /** Set by the SDK's client. */
  onerror?: (error: Error) => void;
  /** Set by the SDK's client. */
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #state: ServerState;
  readonly #identity: string;
  readonly #request: SpawnRequest;
  readonly #tag: string;
  readonly #stderr = new TailBuffer(STDERR_TAIL_BYTES);
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #process: ManagedProcess | undefined;
  #exit: ExitInfo | undefined;
  #closing: Promise<void> | undefined;
  readonly #encoder = new TextEncoder();
  readonly #decoder = new TextDecoder();

  /** A transport that will spawn `request` (already through every guard) when started. */
  constructor(state: ServerState, identity: string, request: SpawnRequest, tag: string) {
    this.#state = state;
    this.#identity = identity;
    this.#request = { ...request, stdin: true };
    this.#tag = tag;
  }

  /** The process, once started. */
  get process(): ManagedProcess | undefined {
    return this.#process;
  }

  /** How the process ended, once it has. */
  get exit(): ExitInfo | undefined {
    return this.#exit;
  }

  /** The end of what the process wrote on stderr. */
  stderrTail(): string {
    return this.#stderr.text().trim();
  }

  /** Spawn the process. Throws what spawning throws (`Deno.errors.NotFound`, …). */
  start(): Promise<void> {
    if (this.#process) throw new Error("the transport was started already");
    const entry = processTable(this.#state).spawn(this.#request, {
      identity: this.#identity,
      kind: "shell",
      tag: this.#tag,
      onChunk: (type, bytes) => {
        if (type === "stderr") this.#stderr.push(bytes.slice());
        else this.#read(bytes);
      },
    });
    this.#process = entry.process;
    entry.process.exited.then((exit) => {
      this.#exit = exit;
      this.onclose?.();
    });
    return Promise.resolve();
  }

  /** Split stdout into lines; each is one message. */
  #read(bytes: Uint8Array): void {
    let start = 0;
    for (let i = bytes.indexOf(NEWLINE); i !== -1; i = bytes.indexOf(NEWLINE, start)) {
      this.#pending.push(bytes.subarray(start, i));
      const line = this.#take();
      start = i + 1;
      this.#deliver(line);
    }
    if (start < bytes.length) {
      this.#pending.push(bytes.slice(start));
      this.#pendingBytes += bytes.length - start;
      if (this.#pendingBytes > MAX_MESSAGE_BYTES) {
        this.#pending = [];
        this.#pendingBytes = 0;
        this.onerror?.(new Error(`a message longer than ${MAX_MESSAGE_BYTES} bytes`));
        this.close();
      }
    }
  }

  #take(): string {
    const parts = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (parts.length === 1) return this.#decoder.decode(parts[0]);
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let off = 0;
    for (const p of parts) {
      all.set(p, off);
      off += p.length;
    }
    return this.#decoder.decode(all);
  }

  #deliver(line: string): void {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (text.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch (e) {
      // A server that logs to stdout: the SDK's client reports it and carries on.
      this.onerror?.(new Error(`not a JSON-RPC message on stdout: ${(e as Error).message}`));
      return;
    }
    this.onmessage?.(message);
  }

  /**
   * Write one message to the server's stdin. When the write fails because the server is gone,
   * rejects with how it ended (`the server was killed by SIGKILL`) once that is known, within
   * {@linkcode EXIT_GRACE_MS}; by then {@linkcode exit} is set too.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    const p = this.#process;
    if (!p) throw new Error("the server process is not running");
    if (this.#exit) throw new Error(`the server ${describeExit(this.#exit)}`);
    try {
      await p.write(this.#encoder.encode(serializeMessage(message)));
    } catch (e) {
      const exit = await this.#exitWithin(EXIT_GRACE_MS);
      if (exit) throw new Error(`the server ${describeExit(exit)}`, { cause: e });
      throw e;
    }
  }

  /** How the process ended, waiting at most `ms` for it; undefined if it is still running. */
  async #exitWithin(ms: number): Promise<ExitInfo | undefined> {
    const p = this.#process;
    if (!p) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const exit = await Promise.race([
      p.exited,
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms))),
    ]).finally(() => clearTimeout(timer));
    // `start()` subscribed to `exited` first, so `#exit` is already set when this resumes.
    return exit;
  }

  /**
   * End the server: close its stdin (a well-behaved server exits), then `SIGTERM`, then
   * `SIGKILL` to the whole group, and wait until the leader is reaped and its output drained.
   * Whatever it left in its group is killed by the process layer when the leader exits.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    const p = this.#process;
    if (!p) return;
    const within = async (ms: number) => (await this.#exitWithin(ms)) !== undefined;
    await p.closeStdin().catch(() => {});
    if (!(await within(CLOSE_GRACE_MS))) {
      p.kill("SIGTERM");
      if (!(await within(CLOSE_GRACE_MS))) p.kill("SIGKILL");
    }
    await p.reaped;
    // A runaway that left the group (`setsid prog &`) may hold the pipes open: let them go.
    if (!(await within(CLOSE_GRACE_MS))) p.release();
    await p.exited;
  }
}

/** How a process ended, in words. */
export function describeExit(exit: ExitInfo): string {
  if (exit.timedOut) return "was stopped by its timeout";
  if (exit.signal) return `was killed by ${exit.signal}`;
  return `exited with code ${exit.exitCode}`;
}
