/**
 * {@linkcode ServerTransport}: how the client talks HTTP to the server. One place for the URL
 * of an endpoint, the credentials, the per-request timeout, the fail-fast check against cached
 * capabilities, cancellation, and turning error answers into the SDK's error classes.
 *
 * @module
 */

import type { ServerCapabilities } from "./server_capabilities.ts";
import {
  ConnectionError,
  errorFromResponse,
  RateLimitedError,
  SandboxError,
  TimeoutError,
  ValidationError,
} from "../errors/mod.ts";
import { ROUTES } from "./routes.ts";
import { ndjson } from "./wire.ts";

/** A `fetch`-compatible function. */
export type FetchFunction = (
  input: Request | URL | string,
  init?: RequestInit,
) => Promise<Response>;

/** A query parameter value; `undefined` and `null` leave the parameter out. */
export type QueryValue = string | number | boolean | null | undefined;

/** Options every client call takes. */
export interface CallOptions {
  /** Cancels the call (and closes its stream, for streaming calls). */
  signal?: AbortSignal;
  /**
   * Seconds for this HTTP request, overriding the client's `timeout`; `0` means none. Not the
   * operation's own `timeout` (which some methods take, also in seconds, as the server does).
   */
  requestTimeout?: number;
}

/** The transport fields of {@linkcode CallOptions}. */
export function callRequest(options: CallOptions): Pick<TransportRequest, "signal" | "timeout"> {
  return { signal: options.signal, timeout: options.requestTimeout };
}

/** One request through {@linkcode ServerTransport}. */
export interface TransportRequest {
  /** Values of the route's `:param` segments. */
  params?: Record<string, string | number>;
  /** Query parameters. */
  query?: Record<string, QueryValue>;
  /** A JSON body. */
  json?: unknown;
  /** A raw body (bytes, a stream, a Blob, FormData…); a stream is sent with `duplex: "half"`. */
  body?: BodyInit | null;
  /** Extra headers. */
  headers?: HeadersInit;
  /** Cancels the request (and the response body, for streams). */
  signal?: AbortSignal;
  /**
   * Seconds for this request, overriding the client's `timeout`; `0` means none. For a stream,
   * the timeout covers the wait for the response headers only.
   */
  timeout?: number;
  /** The response is a stream read by the caller: the timeout stops at the headers. */
  stream?: boolean;
}

/** Options of {@linkcode ServerTransport}. */
export interface ServerTransportOptions {
  /** The server's base URL. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string | null;
  /** Extra headers on every request (for example a gateway's `X-Access-Token`). */
  headers?: HeadersInit;
  /** Default per-request timeout in seconds (`0`: none). */
  timeout: number;
  /** The `fetch` to use. */
  fetch?: FetchFunction;
  /** The cached capabilities, for fail-fast checks; read on every request. */
  capabilities: () => ServerCapabilities | null;
  /** How many times to retry a 429 after its `Retry-After` (default 0). */
  retries?: number;
}

/** Endpoints that never fail fast: health and discovery must always reach the server. */
const NEVER_FAIL_FAST: ReadonlySet<string> = new Set([
  "health",
  "capabilities",
  "capabilities_check",
]);

const MAX_ERROR_BODY = 64 * 1024;

/** The longest `Retry-After` worth waiting for automatically; a longer one is raised at once. */
const MAX_RETRY_WAIT_S = 60;

/** The URL of an endpoint with its params and query filled in. */
export function endpointUrl(
  baseUrl: string,
  endpoint: string,
  params: Record<string, string | number> = {},
  query: Record<string, QueryValue> = {},
): URL {
  const route = ROUTES[endpoint];
  if (!route) throw new ValidationError(`Unknown endpoint id: ${endpoint}`);
  const path = route.slice(route.indexOf(" ") + 1).replace(/:([a-z_]+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === "") {
      throw new ValidationError(`${endpoint}: missing ${name}`);
    }
    return encodeURIComponent(String(value));
  });
  const url = new URL(baseUrl.replace(/\/+$/, "") + path);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
  }
  return url;
}

async function readErrorBody(res: Response): Promise<unknown> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ERROR_BODY) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const decoder = new TextDecoder();
  const text = chunks.map((c, i) => decoder.decode(c, { stream: i < chunks.length - 1 })).join("");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An open request: its response, and `done()` to stop its timer and forget it. */
export interface OpenResponse {
  /** The (successful) response. */
  response: Response;
  /** The signal that aborts this request: the caller's, the timeout's and the client's close. */
  signal: AbortSignal;
  /** Stop the timeout and forget the request; call when the body is consumed or cancelled. */
  done(): void;
}

/**
 * The HTTP layer of a `ServerClient`; its sub-APIs share one. Exposed so that a sub-API (or a
 * test) can make a raw call to any endpoint by id.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * // A raw call by endpoint id, for what the typed sub-APIs do not cover.
 * const info = await client.transport.json<{ hostname: string }>("system_info");
 * assert.equal(info.hostname, "sandbox");
 * ```
 */
export class ServerTransport {
  /** The server's base URL, without a trailing slash. */
  readonly baseUrl: string;
  /** Default per-request timeout in seconds (`0`: none). */
  readonly timeout: number;

  readonly #headers: Headers;
  readonly #fetch: FetchFunction;
  readonly #capabilities: () => ServerCapabilities | null;
  readonly #retries: number;
  readonly #open = new Set<AbortController>();
  readonly #closers = new Set<() => void>();
  #closed = false;

  /** Make a transport. */
  constructor(options: ServerTransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.timeout = options.timeout;
    this.#headers = new Headers(options.headers);
    if (options.token) this.#headers.set("authorization", `Bearer ${options.token}`);
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#capabilities = options.capabilities;
    this.#retries = options.retries ?? 0;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The headers every request carries (credentials included); for WebSocket upgrades. */
  headers(): Headers {
    return new Headers(this.#headers);
  }

  /**
   * Fail fast: throw the error the cached capabilities predict for `endpoint`, without a
   * request. Does nothing when nothing was discovered.
   */
  preflight(endpoint: string): void {
    if (this.#closed) {
      throw new ConnectionError("This ServerClient is closed", {
        suggestion: "Make a new ServerClient (or use client.withToken) after close().",
      });
    }
    if (NEVER_FAIL_FAST.has(endpoint)) return;
    this.#capabilities()?.require(endpoint);
  }

  /**
   * Send a request to an endpoint and return the successful response, still open. Error
   * answers are thrown as the SDK's classes; the caller must call `done()`.
   */
  async open(endpoint: string, req: TransportRequest = {}): Promise<OpenResponse> {
    for (let attempt = 0;; attempt++) {
      try {
        return await this.#attempt(endpoint, req);
      } catch (e) {
        // A 429 is decided at admission, before the handler runs: nothing happened, so any
        // request whose body can be sent again may be retried after Retry-After.
        const retry = e instanceof RateLimitedError && attempt < this.#retries &&
          !(req.body instanceof ReadableStream) && e.retryAfter !== null &&
          e.retryAfter <= MAX_RETRY_WAIT_S;
        if (!retry) throw e;
        await this.#sleep(Math.max(1, e.retryAfter!) * 1000, req.signal);
      }
    }
  }

  /** Wait, unless the caller's signal aborts or the client closes first. */
  #sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const controller = new AbortController();
    this.#open.add(controller);
    const stop = signal ? AbortSignal.any([controller.signal, signal]) : controller.signal;
    return new Promise<void>((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        stop.removeEventListener("abort", onAbort);
        this.#open.delete(controller);
      };
      const onAbort = () => {
        finish();
        reject(stop.reason);
      };
      const timer = setTimeout(() => {
        finish();
        resolve();
      }, ms);
      if (stop.aborted) return onAbort();
      stop.addEventListener("abort", onAbort);
    });
  }

  async #attempt(endpoint: string, req: TransportRequest): Promise<OpenResponse> {
    this.preflight(endpoint);
    const url = endpointUrl(this.baseUrl, endpoint, req.params, req.query);
    const route = ROUTES[endpoint];
    const method = route.slice(0, route.indexOf(" "));
    const headers = new Headers(this.#headers);
    for (const [k, v] of new Headers(req.headers)) headers.set(k, v);
    let body: BodyInit | null | undefined = req.body;
    if (req.json !== undefined) {
      body = JSON.stringify(req.json);
      headers.set("content-type", "application/json");
    }
    const controller = new AbortController();
    this.#open.add(controller);
    const signal = req.signal
      ? AbortSignal.any([controller.signal, req.signal])
      : controller.signal;
    const seconds = req.timeout ?? this.timeout;
    const ms = seconds * 1000;
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined = ms > 0 && Number.isFinite(ms)
      ? setTimeout(() => {
        timedOut = true;
        controller.abort(
          new TimeoutError(`${method} ${url.pathname} (${endpoint}) took over ${seconds} s`),
        );
      }, ms)
      : undefined;
    const done = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      this.#open.delete(controller);
    };
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        body,
        signal,
        // A streamed request body needs half duplex; harmless otherwise.
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit);
    } catch (e) {
      done();
      throw this.#translateFailure(e, signal, timedOut, `${method} ${url.pathname}`);
    }
    if (!response.ok) {
      try {
        const errorBody = await readErrorBody(response);
        throw errorFromResponse(response.status, errorBody, response.headers, endpoint);
      } catch (e) {
        throw this.#translateFailure(e, signal, timedOut, `${method} ${url.pathname}`);
      } finally {
        done();
      }
    }
    if (req.stream && timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    return { response, signal, done };
  }

  /** Send a request and read the JSON answer. */
  async json<T = unknown>(endpoint: string, req: TransportRequest = {}): Promise<T> {
    const { response, signal, done } = await this.open(endpoint, req);
    try {
      const text = await response.text();
      return (text === "" ? null : JSON.parse(text)) as T;
    } catch (e) {
      throw this.#translateFailure(e, signal, false, endpoint, true);
    } finally {
      done();
    }
  }

  /** Send a request and read the answer as bytes. */
  async bytes(endpoint: string, req: TransportRequest = {}): Promise<Uint8Array> {
    const { response, signal, done } = await this.open(endpoint, req);
    try {
      return new Uint8Array(await response.arrayBuffer());
    } catch (e) {
      throw this.#translateFailure(e, signal, false, endpoint, true);
    } finally {
      done();
    }
  }

  /**
   * Send a request whose answer is an NDJSON stream and yield its objects. Stopping the loop
   * cancels the body; the caller's `signal` aborting ends the iteration quietly.
   */
  async *lines(endpoint: string, req: TransportRequest = {}): AsyncGenerator<unknown> {
    const { response, signal, done } = await this.open(endpoint, { ...req, stream: true });
    try {
      if (!response.body) return;
      yield* ndjson(response.body);
    } catch (e) {
      if (req.signal?.aborted) return; // the caller stopped it: that is the end, not a failure
      throw this.#translateFailure(e, signal, false, endpoint, true);
    } finally {
      done();
    }
  }

  /**
   * Run `closer` when the client closes (for connections that are not fetches, such as
   * terminal WebSockets). Returns a function that forgets it.
   */
  track(closer: () => void): () => void {
    this.#closers.add(closer);
    return () => this.#closers.delete(closer);
  }

  /** Abort every request and stream in flight; later calls throw {@linkcode ConnectionError}. */
  close(): void {
    this.#closed = true;
    for (const closer of this.#closers) closer();
    this.#closers.clear();
    for (const c of this.#open) {
      c.abort(new ConnectionError("The ServerClient was closed"));
    }
    this.#open.clear();
  }

  /**
   * A failure as the error users get. `inBody`: the answer's head had arrived, so the server
   * was reached and its answer was cut short (the connection closed mid-body); a downloaded
   * file that shrank while the server read it ends this way too. Saying "unreachable" then
   * sent people looking for a network fault that was not there.
   */
  #translateFailure(
    e: unknown,
    signal: AbortSignal,
    timedOut: boolean,
    what: string,
    inBody = false,
  ): unknown {
    if (signal.aborted) {
      const reason = signal.reason;
      if (timedOut || reason instanceof TimeoutError || reason instanceof ConnectionError) {
        return reason;
      }
      return reason ?? e; // the caller's own AbortSignal: its reason, as fetch does
    }
    if (e instanceof SandboxError || !(e instanceof TypeError)) return e;
    if (inBody) {
      return new ConnectionError(
        `${what}: the answer from ${this.baseUrl} was cut short (${e.message}); ` +
          "a file that changed size while it was read ends this way",
        {
          cause: e,
          suggestion: "Try again. A file its writer truncates and rewrites can be read in " +
            "between: have the writer append instead.",
        },
      );
    }
    return new ConnectionError(
      `${what}: the server at ${this.baseUrl} is unreachable (${e.message})`,
      { cause: e },
    );
  }
}
