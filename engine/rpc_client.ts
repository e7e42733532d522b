/**
 * The protocol side of the host: ids, correlation, validation of everything the engine writes,
 * the in-flight limit, timers, and cancellation. It talks to the process only through `send` and
 * `onUnresponsive`, so the same logic would serve any transport.
 *
 * Rules it keeps:
 * - A line that is not a valid engine message is recorded as a {@linkcode Diagnostic} and
 *   dropped, and the engine is marked as polluting stdout. If the line still names the id of a
 *   request in flight (a response with both `result` and `error`, a result with extra fields),
 *   that request is rejected with code `protocol` at once instead of waiting for a timeout.
 * - A response to an id the host never sent is fatal: nothing the engine says can be matched
 *   safely any more, so every request fails with code `protocol`.
 * - A cancelled request is rejected at once and never resolves later. Its slot stays taken until
 *   the engine answers it (the late answer is recorded and dropped) or `graceMs` passes, after
 *   which `onUnresponsive` is called so the host can end the process.
 *
 * @module
 */
import { EngineError } from "./errors.ts";
import { type ClearLongTimeout, setLongTimeout } from "./long_timer.ts";
import { notificationLine, requestLine } from "./jsonrpc.ts";
import type { LineSink } from "./line_reader.ts";
import { EngineResponseSchema, ProgressNotificationSchema, RESULT_SCHEMAS } from "./schema.ts";
import type { Progress } from "./types.ts";
import { check } from "./validate.ts";
import type { z } from "zod";

/** A request method of the protocol. */
export type Method = keyof typeof RESULT_SCHEMAS;

/** Something the engine did wrong that did not stop the host, recorded with the engine's name. */
export interface Diagnostic {
  /** The manifest name of the engine. */
  engine: string;
  /** `pollution`: not a valid engine message; `overlong`/`partial`: a framing failure; `late`: an
   * answer or progress for a request already cancelled or finished. */
  kind: "pollution" | "overlong" | "partial" | "late";
  /** What was wrong. */
  detail: string;
  /** The start of the offending line, when there was one. */
  line?: string;
}

/** Per-request options. */
export interface RequestOptions {
  /** Called with each `progress` notification for the request while it is live. */
  onProgress?: (progress: Progress) => void;
  /** Fail with `timeout` when the engine says nothing about the request for this long. */
  idleMs?: number;
  /** Fail with `deadline` at this time (milliseconds since the epoch). */
  deadline?: number;
  /** Fail with `cancelled` when this aborts. */
  signal?: AbortSignal;
}

interface Pending {
  id: number;
  method: Method;
  line: string;
  state: "queued" | "sent" | "cancelled";
  settle: PromiseWithResolvers<unknown>;
  options: RequestOptions;
  /** Stops each of the entry's timers. */
  timers: ClearLongTimeout[];
  /** When the request times out unless the engine says something about it (epoch ms). */
  idleAt?: number;
  unlisten?: () => void;
}

/** Options of the client. */
export interface ClientOptions {
  /** How long a cancelled request may go unanswered before the engine counts as unresponsive. */
  graceMs: number;
  /** Queues one line for the engine; a line that cannot be written is the transport's to report. */
  send(line: string): void;
  /** Called once when a cancelled request went unanswered for `graceMs`. */
  onUnresponsive(): void;
  /** Called with each diagnostic as it is recorded. */
  onDiagnostic?(diagnostic: Diagnostic): void;
}

const MAX_DIAGNOSTICS = 100;
/** Resolution of idle timeouts. */
const SWEEP_MS = 50;
const EXCERPT = 200;

/** Correlates requests and responses with one engine. */
export class RpcClient {
  readonly #pending = new Map<number, Pending>();
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #inFlight = 0;
  #closed: EngineError | null = null;
  #sweeper: ReturnType<typeof setInterval> | undefined;
  /** How many requests may be in flight; 1 until the Description says `concurrent`. */
  concurrency = 1;
  /** Diagnostics, oldest first (the last 100). */
  readonly diagnostics: Diagnostic[] = [];
  /** Whether the engine wrote something on stdout that is not a valid engine message. */
  pollutingStdout = false;

  /** Makes a client for the engine named `engine`. */
  constructor(readonly engine: string, readonly options: ClientOptions) {}

  /** The framing callbacks that feed this client. */
  readonly sink: LineSink = {
    line: (text) => this.#receive(text),
    overlong: (head, bytes) => {
      this.#record("overlong", `dropped a line of ${bytes} bytes, over the line limit`, head);
      this.pollutingStdout = true;
    },
    partial: (head, bytes) =>
      this.#record(
        "partial",
        `stdout ended inside a line (${bytes} bytes without a newline)`,
        head,
      ),
  };

  /** Sends a request; resolves with its validated result. */
  request(method: Method, params: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#nextId++;
    const entry: Pending = {
      id,
      method,
      line: requestLine(id, method, params),
      state: "queued",
      settle: Promise.withResolvers(),
      options,
      timers: [],
    };
    if (options.signal?.aborted) {
      return Promise.reject(this.#error("cancelled", `${method} was cancelled before it was sent`));
    }
    if (options.deadline !== undefined) {
      const ms = Math.max(0, options.deadline - Date.now());
      entry.timers.push(setLongTimeout(() => {
        this.#expire(entry, this.#error("deadline", `${method} request ${id} passed its deadline`));
      }, ms));
    }
    if (options.signal) {
      const signal = options.signal;
      const onAbort = () =>
        this.#expire(entry, this.#error("cancelled", `${method} request ${id} was cancelled`));
      signal.addEventListener("abort", onAbort, { once: true });
      entry.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    this.#pending.set(id, entry);
    this.#queue.push(entry);
    this.#pump();
    return entry.settle.promise;
  }

  /** Fails every request, now and later, with `error`. */
  fail(error: EngineError): void {
    this.#closed ??= error;
    this.#queue.length = 0;
    for (const entry of this.#pending.values()) {
      this.#clear(entry);
      if (entry.state !== "cancelled") entry.settle.reject(error);
    }
    this.#pending.clear();
    this.#inFlight = 0;
    this.#stopSweeping();
  }

  /** Whether {@linkcode fail} has been called. */
  get closed(): boolean {
    return this.#closed !== null;
  }

  #pump(): void {
    while (this.#inFlight < this.concurrency && this.#queue.length > 0) {
      const entry = this.#queue.shift()!;
      entry.state = "sent";
      this.#inFlight++;
      this.#touch(entry);
      // A failed write means the process is gone; the end of stdout fails the request.
      this.options.send(entry.line);
    }
  }

  /**
   * Restarts the idle clock; any word about a live request shows the engine is working on it.
   * One sweeping interval serves every request, because a timer per request costs more than the
   * round trip itself when many small requests are in flight.
   */
  #touch(entry: Pending): void {
    if (entry.options.idleMs === undefined) return;
    entry.idleAt = Date.now() + entry.options.idleMs;
    this.#sweeper ??= setInterval(() => this.#sweep(), SWEEP_MS);
  }

  #sweep(): void {
    const now = Date.now();
    let watching = false;
    for (const entry of this.#pending.values()) {
      if (entry.state !== "sent" || entry.idleAt === undefined) continue;
      if (entry.idleAt > now) {
        watching = true;
        continue;
      }
      const ms = entry.options.idleMs;
      this.#expire(
        entry,
        this.#error("timeout", `${entry.method} request ${entry.id} heard nothing for ${ms} ms`),
      );
    }
    if (!watching) this.#stopSweeping();
  }

  #stopSweeping(): void {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  #expire(entry: Pending, error: EngineError): void {
    if (this.#pending.get(entry.id) !== entry || entry.state === "cancelled") return;
    this.#clear(entry);
    entry.settle.reject(error);
    if (entry.state === "queued") {
      this.#queue.splice(this.#queue.indexOf(entry), 1);
      this.#pending.delete(entry.id);
      return;
    }
    entry.state = "cancelled";
    this.options.send(notificationLine("cancel", { id: entry.id }));
    entry.timers.push(setLongTimeout(() => this.options.onUnresponsive(), this.options.graceMs));
  }

  #clear(entry: Pending): void {
    for (const stop of entry.timers) stop();
    entry.timers = [];
    entry.idleAt = undefined;
    entry.unlisten?.();
  }

  #finish(entry: Pending): void {
    this.#clear(entry);
    this.#pending.delete(entry.id);
    this.#inFlight--;
    this.#pump();
  }

  #receive(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return this.#pollution("not JSON", text);
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      return this.#pollution("not a JSON object", text);
    }
    if ("method" in message) return this.#notification(message, text);
    this.#response(message as { id?: unknown }, text);
  }

  #notification(message: object, text: string): void {
    const checked = check(ProgressNotificationSchema, message, "notification");
    if (!checked.ok) return this.#pollution(checked.message, text);
    const progress = checked.value.params;
    const entry = this.#pending.get(progress.id);
    if (entry?.state !== "sent") {
      if (progress.id >= this.#nextId || entry?.state === "queued") {
        return this.#pollution(`progress for request ${progress.id}, which was never sent`, text);
      }
      return this.#record(
        "late",
        `progress for request ${progress.id}, already over, ignored`,
        text,
      );
    }
    this.#touch(entry);
    entry.options.onProgress?.(progress);
  }

  #response(message: { id?: unknown }, text: string): void {
    const checked = check(EngineResponseSchema, message, "response");
    const id = checked.ok ? checked.value.id : message.id;
    const entry = typeof id === "number" ? this.#pending.get(id) : undefined;
    if (!checked.ok) {
      this.#pollution(checked.message, text);
      if (entry?.state === "sent") {
        entry.settle.reject(
          this.#error(
            "protocol",
            `invalid response to ${entry.method} request ${entry.id}: ${checked.message}`,
          ),
        );
        this.#finish(entry);
      } else if (entry?.state === "cancelled") this.#finish(entry);
      return;
    }
    const response = checked.value;
    if (!entry || entry.state === "queued") {
      if (response.id < this.#nextId && !entry) {
        return this.#record("late", `second response to request ${response.id} ignored`, text);
      }
      this.#pollution(`response to request ${response.id}, which the host never sent`, text);
      return this.fail(
        this.#error(
          "protocol",
          `answered request ${response.id}, which the host never sent; no answer can be trusted to match its request any more`,
        ),
      );
    }
    if (entry.state === "cancelled") {
      this.#record("late", `response to cancelled request ${entry.id} ignored`, text);
      return this.#finish(entry);
    }
    if (response.error) {
      entry.settle.reject(
        new EngineError(response.error.code, this.engine, response.error.message),
      );
    } else {
      const schema: z.ZodType<unknown> = RESULT_SCHEMAS[entry.method];
      const result = check(schema, response.result, "result");
      if (result.ok) entry.settle.resolve(result.value);
      else {
        this.#pollution(result.message, text);
        entry.settle.reject(
          this.#error("protocol", `invalid ${entry.method} result: ${result.message}`),
        );
      }
    }
    this.#finish(entry);
  }

  #pollution(detail: string, line: string): void {
    this.pollutingStdout = true;
    this.#record("pollution", detail, line);
  }

  #record(kind: Diagnostic["kind"], detail: string, line: string): void {
    const diagnostic: Diagnostic = {
      engine: this.engine,
      kind,
      detail,
      line: line.slice(0, EXCERPT),
    };
    this.diagnostics.push(diagnostic);
    if (this.diagnostics.length > MAX_DIAGNOSTICS) this.diagnostics.shift();
    this.options.onDiagnostic?.(diagnostic);
  }

  #error(code: EngineError["code"], message: string): EngineError {
    return new EngineError(code, this.engine, message);
  }
}
