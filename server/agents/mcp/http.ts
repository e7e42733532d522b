/**
 * An `http` MCP server (Streamable HTTP, the SDK's own client transport), reached only through
 * {@linkcode GuardedFetch}, with the bearer token of its vault credential when it has one.
 * Headers of the transport are sent as given (the agents schema already refuses an
 * `Authorization` header on an agent).
 *
 * @module
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type BearerSource, credentialBearer } from "./credentials.ts";
import { McpServerError, redact } from "./errors.ts";
import { GuardedFetch, UrlRefusedError } from "./guarded_fetch.ts";
import type { McpContext, McpToolConfig } from "./types.ts";

type HttpTransportConfig = Extract<McpToolConfig["transport"], { type: "http" }>;

/** A connected HTTP server's transport and what it holds. */
export interface HttpConnection {
  /** The SDK transport. */
  transport: StreamableHTTPClientTransport;
  /** The guarded fetch (its proxy is closed with the connection). */
  guarded: GuardedFetch;
  /** The credential in use, if any. */
  bearer: BearerSource | undefined;
  /** The last 401/403 the server answered, for errors. */
  lastDenied(): number | undefined;
}

/** `fetch` that adds the bearer token to requests for `origin`, refreshing once on a 401. */
function authorizing(
  base: GuardedFetch["fetch"],
  origin: string,
  bearer: BearerSource | undefined,
  denied: (status: number) => void,
): GuardedFetch["fetch"] {
  return async (input, init) => {
    const own = new URL(String(input)).origin === origin;
    if (!bearer || !own) {
      const res = await base(input, init);
      if (own && (res.status === 401 || res.status === 403)) denied(res.status);
      return res;
    }
    const send = (token: string) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${token}`);
      return base(input, { ...init, headers });
    };
    const token = await bearer.token();
    let res = await send(token);
    if (res.status === 401) {
      const fresh = await bearer.refresh(token);
      if (fresh !== null) {
        await res.body?.cancel();
        res = await send(fresh);
      }
    }
    if (res.status === 401 || res.status === 403) denied(res.status);
    return res;
  };
}

/** Connect `client` to an HTTP server; on failure everything opened is closed before this rejects. */
export async function connectHttp(
  config: McpToolConfig & { transport: HttpTransportConfig },
  ctx: McpContext,
  client: Client,
  timeoutMs: number,
): Promise<HttpConnection> {
  const label = config.server_label;
  const url = config.transport.server_url;
  const guarded = GuardedFetch.open(ctx.state);
  let bearer: BearerSource | undefined;
  let denied: number | undefined;
  try {
    const refusal = guarded.check(url);
    if (refusal) {
      throw new McpServerError(label, refusal.code, refusal.message, {
        rule: refusal.rule,
        param: "transport.server_url",
      });
    }
    if (config.credential_id) {
      bearer = await credentialBearer(label, config.credential_id, url, ctx, guarded);
    }
    const origin = new URL(url).origin;
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      fetch: authorizing(guarded.fetch, origin, bearer, (s) => (denied = s)),
      requestInit: { headers: { ...(config.transport.headers ?? {}) } },
      reconnectionOptions: {
        maxRetries: 2,
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 5000,
        reconnectionDelayGrowFactor: 2,
      },
    });
    try {
      await client.connect(transport, { timeout: timeoutMs });
    } catch (e) {
      await transport.close().catch(() => {});
      throw httpFailure(label, e, guarded, denied, !!bearer, timeoutMs, bearer?.secrets() ?? []);
    }
    return { transport, guarded, bearer, lastDenied: () => denied };
  } catch (e) {
    await guarded.close();
    throw e;
  }
}

/** Why an HTTP server could not be used, in words (never a secret). */
export function httpFailure(
  label: string,
  e: unknown,
  guarded: GuardedFetch,
  denied: number | undefined,
  withCredential: boolean,
  timeoutMs: number,
  secrets: Iterable<string>,
): McpServerError {
  if (e instanceof McpServerError) return e;
  const refusal = e instanceof UrlRefusedError ? e.refusal : guarded.lastRefusal;
  if (refusal) {
    return new McpServerError(label, refusal.code, refusal.message, {
      rule: refusal.rule,
      param: "transport.server_url",
      cause: e,
    });
  }
  if (denied !== undefined) {
    return new McpServerError(
      label,
      "mcp_unauthorized",
      withCredential
        ? `the server refused the credential (HTTP ${denied})`
        : `the server requires authorization (HTTP ${denied}); name a vault credential with credential_id`,
      { param: "credential_id", cause: e },
    );
  }
  if ((e as { code?: number })?.code === -32001) {
    return new McpServerError(
      label,
      "mcp_timeout",
      `the server did not answer within ${timeoutMs / 1000} s`,
      { cause: e },
    );
  }
  const message = redact((e as Error)?.message ?? String(e), secrets);
  return new McpServerError(
    label,
    "mcp_unavailable",
    `the server could not be reached: ${message}`,
    {
      cause: e,
    },
  );
}
