/**
 * {@linkcode ServerClient}: the typed client of the in-sandbox server.
 *
 * @module
 */

import { type CapabilitiesDocumentWire, ServerCapabilities } from "./server_capabilities.ts";
import { ValidationError } from "../errors/mod.ts";
import { checkOptions, timeoutSeconds } from "../errors/option_checks.ts";
import type { PathDecision, PathOperation } from "../models/core.ts";
import { AgentsApi } from "./agents.ts";
import { BrowserApi } from "./browser.ts";
import { NamedCommandsApi } from "./named_commands.ts";
import { DevtoolsApi } from "./devtools.ts";
import { FilesApi } from "./files.ts";
import { ProcessApi } from "./process.ts";
import { PtyApi } from "./pty.ts";
import { SystemApi } from "./system.ts";
import { type FetchFunction, ServerTransport } from "./transport.ts";

/** Options of {@linkcode ServerClient}. */
export interface ServerClientOptions {
  /** The server's token, sent as `Authorization: Bearer <token>`. */
  token?: string | null;
  /**
   * Headers sent with every request, for example a platform gateway's `X-Access-Token` (from
   * `sandbox.network.getAccessHeaders()`).
   */
  headers?: HeadersInit;
  /**
   * The PTY WebSocket URL (`ws://host:9001`). Default: derived from `baseUrl` (port 9000 →
   * 9001, or a `9000-<id>.<domain>` host → `9001-<id>.<domain>`).
   */
  ptyUrl?: string | null;
  /**
   * Per-request HTTP timeout in seconds (default 30; `0` for none; at most 86400, so that a
   * value in milliseconds is refused rather than taken for hours). It bounds one request, and
   * for streams only the wait for the response headers: a `files.watch` or `process.follow`
   * lasts until you stop it. It is not a sandbox lifetime, and not a command's own `timeout`.
   */
  timeout?: number;
  /** A `fetch` to use instead of the global one (for a proxy client, tracing, tests). */
  fetch?: FetchFunction;
  /**
   * How many times a call refused with 429 (`RateLimitedError`) is retried after waiting its
   * `Retry-After` (at most 60 s each); default 0: the error is raised at once. Safe for every
   * method: the server refuses at admission, before anything runs. Streamed uploads are never
   * retried (their body cannot be sent twice).
   */
  retries?: number;
}

/** The default per-request timeout, in seconds. */
export const DEFAULT_TIMEOUT_SECONDS = 30;

const CLIENT_OPTIONS = ["token", "headers", "ptyUrl", "timeout", "fetch", "retries"] as const;

/** `baseUrl` with its port swapped for the PTY port, as a ws(s) URL; null when unguessable. */
export function derivePtyUrl(baseUrl: string): string | null {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const gateway = /^9000-(.+)$/.exec(url.hostname);
  if (gateway) {
    url.hostname = `9001-${gateway[1]}`;
  } else if (url.port === "9000") {
    url.port = "9001";
  } else {
    return null;
  }
  return url.origin;
}

interface DecisionWire {
  endpoint: string;
  allowed: boolean;
  code: string | null;
  reason: string;
  rule?: string | null;
  path?: string | null;
  operation?: PathOperation;
}

/**
 * The typed client of the in-sandbox server (HTTP on port 9000, PTY WebSocket on 9001).
 *
 * Sub-APIs, one per server group: `files`, `process`, `pty`, `system`, `devtools`, `browser`,
 * `commands`, `agents`. Every error is a `SandboxError`; server refusals are
 * `ServerAPIError`s with the server's `serverCode`, `endpoint` and `rule`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EndpointNotAvailableError, Sandbox, ServerClient } from "@sandbar/sandbar/sdk";
 *
 * await using sandbox = await Sandbox.create();
 * const client: ServerClient = sandbox.server; // or new ServerClient(url, { token })
 * assert.equal(await client.health(), true);
 * const caps = await client.discover(); // later calls fail fast on what it says is off
 * assert.ok(caps.available().includes("shell"));
 * assert.equal(caps.can("browser_navigate"), false); // opt-in, off by default
 * await assert.rejects(client.browser.content(), EndpointNotAvailableError); // no request made
 * ```
 */
export class ServerClient {
  /** The server's base URL, without a trailing slash. */
  readonly baseUrl: string;
  /** The PTY WebSocket base URL, or null when it could not be derived and was not given. */
  readonly ptyUrl: string | null;
  /** Per-request timeout in seconds (`0`: none). */
  readonly timeout: number;
  #capabilities: ServerCapabilities | null = null;
  /** The HTTP layer shared by the sub-APIs; for raw calls by endpoint id. */
  readonly transport: ServerTransport;
  /** Files: list, stat, exists, mkdir, delete, move, search, archive, watch, upload, download… */
  readonly files: FilesApi;
  /** Processes: shell, shellStream, runStream, start, list, get, signal, wait, output, follow… */
  readonly process: ProcessApi;
  /** Terminals: create, list, get, resize, delete, connect (WebSocket). */
  readonly pty: PtyApi;
  /** The machine: info, metrics, env, setEnv, ports, packages. */
  readonly system: SystemApi;
  /** Code and git: runCode, gitStatus, gitDiff. */
  readonly devtools: DevtoolsApi;
  /** Headless Chromium: navigate, screenshot, content, click, type, evaluate, pdf, console. */
  readonly browser: BrowserApi;
  /** Named commands: list, run. */
  readonly commands: NamedCommandsApi;
  /** The OpenAI-compatible agents group under `/v1/` (a thin pass-through). */
  readonly agents: AgentsApi;

  readonly #options: ServerClientOptions;

  /** Make a client for the server at `baseUrl` (for example `http://127.0.0.1:9000`). */
  constructor(baseUrl: string, options: ServerClientOptions = {}) {
    try {
      new URL(baseUrl);
    } catch {
      throw new ValidationError(`baseUrl is not a URL: ${baseUrl}`, {
        suggestion: "Pass the server's address, for example http://127.0.0.1:9000.",
      });
    }
    checkOptions("ServerClient", options, CLIENT_OPTIONS);
    const timeout = timeoutSeconds("timeout", options.timeout ?? DEFAULT_TIMEOUT_SECONDS, "none");
    this.#options = options;
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.ptyUrl = options.ptyUrl?.replace(/\/+$/, "") ?? derivePtyUrl(this.baseUrl);
    this.timeout = timeout;
    this.transport = new ServerTransport({
      baseUrl: this.baseUrl,
      token: options.token,
      headers: options.headers,
      timeout,
      fetch: options.fetch,
      retries: options.retries,
      capabilities: () => this.#capabilities,
    });
    const token = options.token ?? null;
    this.files = new FilesApi(this.transport);
    this.process = new ProcessApi(this.transport);
    this.pty = new PtyApi(this.transport, this.ptyUrl, token);
    this.system = new SystemApi(this.transport);
    this.devtools = new DevtoolsApi(this.transport);
    this.browser = new BrowserApi(this.transport);
    this.commands = new NamedCommandsApi(this.transport);
    this.agents = new AgentsApi(this.transport, token);
  }

  /**
   * The capabilities from the last `discover()`, or null. Calls fail fast on them. Read-only:
   * `discover()` replaces them, `forgetDiscovery()` drops them.
   */
  get capabilities(): ServerCapabilities | null {
    return this.#capabilities;
  }

  /**
   * Whether the server answers `GET /health`. Never throws: an unreachable server, a timeout
   * or a closed client all give false.
   */
  async health(options: { signal?: AbortSignal; timeout?: number } = {}): Promise<boolean> {
    try {
      const body = await this.transport.json<{ status?: string }>("health", options);
      return body?.status === "ok";
    } catch {
      return false;
    }
  }

  /**
   * Fetch the capabilities document (`GET /capabilities`) for this client's identity and cache
   * it on {@linkcode capabilities}: from then on, a call to an endpoint it says is off or not
   * allowed throws at once, without a request. `forgetDiscovery()` drops the cache.
   */
  async discover(options: { signal?: AbortSignal; timeout?: number } = {}): Promise<
    ServerCapabilities
  > {
    const doc = await this.transport.json<CapabilitiesDocumentWire>("capabilities", options);
    const caps = new ServerCapabilities(
      doc,
      (endpoint, path, op) => this.check(endpoint, path, op),
    );
    this.#capabilities = caps;
    return caps;
  }

  /** Drop the cached capabilities: calls go to the server again without a pre-check. */
  forgetDiscovery(): void {
    this.#capabilities = null;
  }

  /**
   * Ask the server whether `endpoint` (and, optionally, `path` with operation `op`) would be
   * allowed for this identity (`POST /capabilities/check`). Nothing is run; the path decision
   * is lexical, never an existence oracle.
   */
  async check(
    endpoint: string,
    path?: string,
    op?: PathOperation,
    options: { signal?: AbortSignal; timeout?: number } = {},
  ): Promise<PathDecision> {
    const body: Record<string, string> = { endpoint };
    if (path !== undefined) body.path = path;
    if (op !== undefined) body.operation = op;
    const d = await this.transport.json<DecisionWire>("capabilities_check", {
      ...options,
      json: body,
    });
    return {
      endpoint: d.endpoint,
      allowed: d.allowed,
      code: d.code ?? null,
      reason: d.reason,
      rule: d.rule ?? null,
      path: d.path ?? null,
      operation: d.operation ?? null,
    };
  }

  /** A new client for the same server and options, calling as another identity. */
  withToken(token: string): ServerClient {
    return new ServerClient(this.baseUrl, { ...this.#options, ptyUrl: this.ptyUrl, token });
  }

  /** Abort every request, stream and terminal connection of this client; later calls throw. */
  close(): Promise<void> {
    this.transport.close();
    return Promise.resolve();
  }

  /** `await using client = new ServerClient(...)` closes it on scope exit. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
