/**
 * One MCP server of an agent, connected: the SDK's `Client` over a stdio transport in the
 * process table or a guarded Streamable HTTP transport, its tools listed (every page) and
 * filtered by `allowed_tools`, and calls whose failures become text for the model.
 *
 * `allowed_tools` keeps the tools it names, in the server's order; a name the server does not
 * list is left out (a server's list may change between sessions), an empty list keeps none, and
 * an absent one keeps all.
 *
 * @module
 */

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { SERVER_VERSION } from "../../version.ts";
import { redact } from "./errors.ts";
import { connectHttp, type HttpConnection, httpFailure } from "./http.ts";
import { describeExit, type ProcessStdioTransport } from "./process_transport.ts";
import { capOutput, resultOutput } from "./results.ts";
import { connectStdio, stdioFailure } from "./stdio.ts";
import type { McpCallResult, McpContext, McpToolConfig } from "./types.ts";

/** Default time a server has to start and list its tools. */
export const DEFAULT_START_TIMEOUT_MS = 30_000;

/** Default time one call may take (restarted by each progress report). */
export const DEFAULT_CALL_TIMEOUT_MS = 5 * 60_000;

/** Most pages of `tools/list` read from one server. */
const MAX_LIST_PAGES = 100;

/** A connected server. */
export class McpConnection {
  /** The agent's `server_label`. */
  readonly label: string;
  /** The tools offered (after `allowed_tools`). */
  readonly tools: readonly Tool[];
  readonly #config: McpToolConfig;
  readonly #client: Client;
  readonly #stdio: ProcessStdioTransport | undefined;
  readonly #http: HttpConnection | undefined;
  readonly #callTimeoutMs: number;
  readonly #secrets: () => string[];
  #closing: Promise<void> | undefined;

  private constructor(
    config: McpToolConfig,
    client: Client,
    tools: Tool[],
    link: { stdio?: ProcessStdioTransport; http?: HttpConnection },
    callTimeoutMs: number,
    secrets: () => string[],
  ) {
    this.label = config.server_label;
    this.#config = config;
    this.#client = client;
    this.tools = tools;
    this.#stdio = link.stdio;
    this.#http = link.http;
    this.#callTimeoutMs = callTimeoutMs;
    this.#secrets = secrets;
  }

  /** Connect to the server of `config` and list its tools; rejects with an `McpServerError`. */
  static async open(config: McpToolConfig, ctx: McpContext): Promise<McpConnection> {
    const startTimeout = ctx.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const callTimeout = ctx.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const client = new Client({ name: "sandbar", version: SERVER_VERSION });
    const envSecrets = Object.values(ctx.env ?? {});
    let stdio: ProcessStdioTransport | undefined;
    let http: HttpConnection | undefined;
    if (config.transport.type === "stdio") {
      stdio = await connectStdio(
        config as Parameters<typeof connectStdio>[0],
        ctx,
        client,
        startTimeout,
      );
    } else {
      http = await connectHttp(
        config as Parameters<typeof connectHttp>[0],
        ctx,
        client,
        startTimeout,
      );
    }
    const secrets = () => [...envSecrets, ...(http?.bearer?.secrets() ?? [])];
    let tools: Tool[];
    try {
      tools = await listAll(client, startTimeout);
    } catch (e) {
      await closeLink(client, stdio, http);
      throw stdio
        ? stdioFailure(config.server_label, stdio, e, startTimeout, secrets())
        : httpFailure(
          config.server_label,
          e,
          http!.guarded,
          http!.lastDenied(),
          !!http!.bearer,
          startTimeout,
          secrets(),
        );
    }
    const allowed = config.allowed_tools;
    if (allowed) tools = tools.filter((t) => allowed.includes(t.name));
    return new McpConnection(config, client, tools, { stdio, http }, callTimeout, secrets);
  }

  /**
   * Call `tool` (its name on the server) with `args`. Whatever the server or the connection
   * does is an `isError` result; only an aborted `signal` rejects (with its reason).
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<McpCallResult> {
    signal?.throwIfAborted();
    if (this.#closing) return { output: this.#prefix("the connection is closed"), isError: true };
    const meta = this.#config.request_metadata;
    try {
      const result = await this.#client.callTool(
        { name: tool, arguments: args, ...(meta ? { _meta: meta } : {}) },
        undefined,
        {
          signal,
          timeout: this.#callTimeoutMs,
          resetTimeoutOnProgress: true,
          onprogress: () => {},
        },
      );
      return resultOutput(result as Record<string, unknown>);
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      return { output: capOutput(this.#explain(e)), isError: true };
    }
  }

  #prefix(text: string): string {
    return `MCP server '${this.label}': ${text}`;
  }

  /** A failed call in words. */
  #explain(e: unknown): string {
    const exit = this.#stdio?.exit;
    if (exit) {
      const stderr = redact(this.#stdio!.stderrTail(), this.#secrets());
      return this.#prefix(
        `the server ${describeExit(exit)}${stderr ? `; its stderr ends with: ${stderr}` : ""}`,
      );
    }
    if ((e as { code?: number })?.code === -32001) {
      return this.#prefix(`the call did not finish within ${this.#callTimeoutMs / 1000} s`);
    }
    if (this.#http) {
      const failure = httpFailure(
        this.label,
        e,
        this.#http.guarded,
        undefined,
        !!this.#http.bearer,
        this.#callTimeoutMs,
        this.#secrets(),
      );
      if (failure.code !== "mcp_unavailable") return failure.message;
    }
    return this.#prefix(redact((e as Error)?.message ?? String(e), this.#secrets()));
  }

  /** Close the connection (and end a stdio server's process group). Idempotent. */
  close(): Promise<void> {
    return this.#closing ??= closeLink(this.#client, this.#stdio, this.#http);
  }
}

async function listAll(client: Client, timeout: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const answer = await client.listTools(cursor ? { cursor } : undefined, { timeout });
    tools.push(...answer.tools);
    cursor = answer.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

async function closeLink(
  client: Client,
  stdio: ProcessStdioTransport | undefined,
  http: HttpConnection | undefined,
): Promise<void> {
  if (http) {
    // Tell the server the session is over (best effort: it may be gone already).
    await http.transport.terminateSession().catch(() => {});
  }
  await client.close().catch(() => {});
  if (stdio) await stdio.close();
  if (http) await http.guarded.close();
}
