/**
 * The Hono applications, built from the endpoint table: one for the HTTP port and one for the
 * PTY port. Every route gets the same pipeline, in the contract's order: match (the router),
 * authenticate, admit, duplicate parameters, body limit, the handler and its guards, and the
 * audit entry (which wraps the rest so it sees the final status).
 *
 * @module
 */

import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { ApiError, renderError } from "./errors.ts";
import type { EndpointHandler, HandlerMap } from "./handlers/types.ts";
import { admit } from "./middleware/admit/index.ts";
import { audit, type AuditSink } from "./middleware/audit/index.ts";
import { authenticate } from "./middleware/authenticate/index.ts";
import { limitBody } from "./middleware/body_limit/index.ts";
import { rejectDuplicateParameters } from "./middleware/duplicate_params/index.ts";
import type { EndpointState } from "./policy/compile.ts";
import type { ServerEnv, ServerState } from "./state.ts";

const unreachable: EndpointHandler = () => {
  // Admission refuses endpoints without a handler (code:unimplemented), so this never runs.
  throw new ApiError("internal", "No handler");
};

function paramCount(path: string): number {
  return path.split("/").filter((s) => s.startsWith(":")).length;
}

function notFound(path: string): ApiError {
  return new ApiError("not_found", `Not found: ${path}`);
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
 * @example
 * ```ts ignore
 * const { http } = buildApps(state, HANDLERS, sink);
 * Deno.serve(http.fetch);
 * ```
 */
export function buildApps(state: ServerState, handlers: HandlerMap, sink: AuditSink): ServerApps {
  const apps: ServerApps = { http: new Hono<ServerEnv>(), pty: new Hono<ServerEnv>() };
  const auditStep = audit(state.policy.audit, sink);
  const authStep = authenticate();
  const admitStep = admit();
  const dupStep = rejectDuplicateParameters();
  const bodyStep = limitBody();
  // Static segments must win over parameters (`/v1/agents/sessions` is not an agent id), and
  // Hono runs matching routes in registration order, so fewer parameters go first.
  const states: EndpointState[] = [...state.policy.endpoints.values()]
    .sort((a, b) => paramCount(a.spec.path) - paramCount(b.spec.path));
  for (const e of states) {
    const bind = createMiddleware<ServerEnv>(async (c, next) => {
      c.set("state", state);
      c.set("endpoint", e);
      await next();
    });
    const app = e.spec.port === "pty" ? apps.pty : apps.http;
    app.on(
      e.spec.method,
      e.spec.path,
      bind,
      auditStep,
      authStep,
      admitStep,
      dupStep,
      bodyStep,
      handlers[e.spec.id] ?? unreachable,
    );
  }
  for (const app of [apps.http, apps.pty]) {
    app.notFound((c) => renderError(notFound(c.req.path), c.req.path));
    app.onError((err, c) => {
      const apiError = err instanceof ApiError
        ? err
        : new ApiError("internal", `Internal error: ${err.message}`, { cause: err });
      if (!(err instanceof ApiError)) console.error(`sandbar: ${err.stack ?? err.message}`);
      return renderError(apiError, c.req.path, c.var.endpoint?.spec.id);
    });
  }
  return apps;
}
