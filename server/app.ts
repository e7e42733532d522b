/**
 * The Hono applications, built from the endpoint table: one for the HTTP port and one for the
 * PTY port. Every route gets the same pipeline (`server/pipeline/`), in the contract's order:
 * match (the router), authenticate, admit, duplicate parameters, body limit, the handler and its
 * guards, and the audit entry.
 *
 * @module
 */

import { Hono } from "hono";
import { ApiError, renderError } from "./errors.ts";
import type { EndpointHandler, HandlerMap } from "./pipeline/handler.ts";
import type { AuditSink } from "./pipeline/audit.ts";
import { asApiError, createPipeline } from "./pipeline/run.ts";
import { StaticFirstRouter } from "./pipeline/match.ts";
import type { EndpointState } from "./policy/compile.ts";
import type { ServerEnv, ServerState } from "./state.ts";

const unreachable: EndpointHandler = () => {
  // Admission refuses endpoints without a handler (code:unimplemented), so this never runs.
  throw new ApiError("internal", "No handler");
};

function paramCount(path: string): number {
  return path.split("/").filter((s) => s.startsWith(":")).length;
}

/**
 * OpenAI API paths a client may try that this server does not serve, with what to use instead:
 * the `openai` client pointed at the sandbox reaches them, and a bare "Not found" would leave the
 * caller guessing whether the path or the server is wrong.
 */
const NOT_SERVED: Readonly<Record<string, string>> = {
  "/v1/chat/completions": "Chat Completions is not served by the sandbox: use the Responses " +
    "API (client.responses.create, POST /v1/responses), proxied to the sandbox's upstream " +
    "(which may itself speak Chat Completions: the policy's agents.upstream.api)",
  "/v1/completions": "Completions is not served by the sandbox: use the Responses API " +
    "(client.responses.create, POST /v1/responses)",
};

function notFound(path: string): ApiError {
  const instead = Object.hasOwn(NOT_SERVED, path) ? NOT_SERVED[path] : undefined;
  return new ApiError(
    "not_found",
    instead ? `Not found: ${path}. ${instead}` : `Not found: ${path}`,
  );
}

/** The two applications. */
export interface ServerApps {
  /** Routes of the HTTP port. */
  http: Hono<ServerEnv>;
  /** Routes of the PTY port (`pty_connect`). */
  pty: Hono<ServerEnv>;
}

/**
 * Build the applications for a server state.
 *
 * @example Answering requests in-process
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildApps } from "./app.ts";
 * import { CommandRegistry } from "./named_commands/registry.ts";
 * import { HANDLERS } from "./handlers/mod.ts";
 * import { compilePolicy } from "./policy/compile.ts";
 * import { ServerState } from "./state.ts";
 * const implemented = new Set(Object.keys(HANDLERS));
 * const options = { root: "/", env: {}, implemented, defaultToken: "t".repeat(20), configured: false };
 * const state = new ServerState(compilePolicy({}, options), "/", new CommandRegistry(), "/tmp");
 * const { http } = buildApps(state, HANDLERS, () => {});
 * assert.equal((await http.request("/health")).status, 200);
 * assert.equal((await http.request("/files/list?path=/")).status, 401); // no token
 * ```
 */
export function buildApps(state: ServerState, handlers: HandlerMap, sink: AuditSink): ServerApps {
  const apps: ServerApps = {
    http: new Hono<ServerEnv>({ router: new StaticFirstRouter() }),
    pty: new Hono<ServerEnv>({ router: new StaticFirstRouter() }),
  };
  const route = createPipeline(state, sink);
  // Static segments must win over parameters (`/v1/agents/sessions` is not an agent id), and
  // Hono runs matching routes in registration order, so fewer parameters go first.
  const states: EndpointState[] = [...state.policy.endpoints.values()]
    .sort((a, b) => paramCount(a.spec.path) - paramCount(b.spec.path));
  for (const e of states) {
    const app = e.spec.port === "pty" ? apps.pty : apps.http;
    app.on(e.spec.method, e.spec.path, route(e, handlers[e.spec.id] ?? unreachable));
  }
  for (const app of [apps.http, apps.pty]) {
    app.notFound((c) => renderError(notFound(c.req.path), c.req.path));
    // Errors inside a route are rendered by the pipeline; this catches Hono's own.
    app.onError((err, c) => renderError(asApiError(err), c.req.path));
  }
  return apps;
}
