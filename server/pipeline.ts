/**
 * The request pipeline, in the contract's order, run for every route: match (the router, before
 * this), authenticate, admit, duplicate query parameters, body limit, the handler with its
 * guards, and the audit entry. Each step lives in its own folder under `middleware/` as a plain
 * function that throws {@linkcode ApiError}; this runner calls them in order with no
 * per-request middleware chain, because the chain's dispatch was a measurable share of the
 * pipeline's cost (see `scripts/bench/pipeline.ts`).
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError, renderError } from "./errors.ts";
import type { EndpointHandler } from "./handlers/types.ts";
import type { EndpointState, Identity } from "./policy/compile.ts";
import type { ServerEnv, ServerState } from "./state.ts";
import { type AdmissionLimits, admit, releaseWhenDone } from "./middleware/admit/index.ts";
import { ConcurrencyLimiter, RateLimiter } from "./middleware/admit/limits.ts";
import { type AuditSink, recordAudit } from "./middleware/audit/index.ts";
import { authenticate } from "./middleware/authenticate/index.ts";
import { limitBody } from "./middleware/body_limit/index.ts";
import { rejectDuplicateParameters } from "./middleware/duplicate_params/index.ts";

/**
 * An error as an {@linkcode ApiError}: unknown errors become `internal` (and are logged, since
 * their message may be all an operator gets).
 *
 * @example
 * ```ts ignore
 * const apiError = asApiError(err);
 * ```
 */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  console.error(`sandbar: ${e.stack ?? e.message}`);
  return new ApiError("internal", `Internal error: ${e.message}`, { cause: e });
}

/**
 * The pipeline for one server: returns, per endpoint, the route handler that runs every step.
 *
 * @example
 * ```ts ignore
 * const route = createPipeline(state, sink);
 * app.on("GET", "/commands", route(endpointState, handler));
 * ```
 */
export function createPipeline(state: ServerState, sink: AuditSink) {
  const limits: AdmissionLimits = {
    rate: new RateLimiter(),
    concurrency: new ConcurrencyLimiter(),
  };
  const setting = state.policy.audit;
  const { identities, bodyBytes } = state.policy;
  /** The step after the handler: the body limit's last word, release, audit. */
  const finish = (
    c: Context<ServerEnv>,
    endpoint: EndpointState,
    identity: Identity | undefined,
    response: Response | undefined,
    error: unknown,
    release: (() => void) | undefined,
    exceeded: (() => ApiError | undefined) | undefined,
  ): Response => {
    // A handler that failed, or answered, after an over-limit body was cut off is answered
    // with the limit; nothing of its answer is sent.
    const over = exceeded?.();
    if (over) {
      response?.body?.cancel().catch(() => {});
      response = undefined;
      error = over;
    }
    if (response === undefined) {
      response = renderError(asApiError(error), c.req.path, endpoint.spec.id);
    }
    if (release) response = releaseWhenDone(response, release);
    recordAudit(endpoint, identity, setting, sink, response.status, error);
    return response;
  };
  // Not an async function: a handler that answers synchronously (listings, health, status)
  // gets its response back to Deno.serve without a promise, which was a measurable share of
  // the cheapest routes' cost. The steps take what they need as arguments rather than reading
  // the context's variables, which cost a map lookup each.
  return (endpoint: EndpointState, handler: EndpointHandler) =>
  (c: Context<ServerEnv>): Response | Promise<Response> => {
    c.set("state", state);
    c.set("endpoint", endpoint);
    const req = c.req.raw;
    let identity: Identity | undefined;
    let release: (() => void) | undefined;
    let exceeded: (() => ApiError | undefined) | undefined;
    let result: Response | Promise<Response>;
    try {
      identity = authenticate(req, endpoint, identities);
      if (identity) c.set("identity", identity);
      release = admit(endpoint, identity, limits);
      rejectDuplicateParameters(req.url);
      exceeded = limitBody(c, endpoint, bodyBytes);
      result = handler(c);
    } catch (e) {
      return finish(c, endpoint, identity, undefined, e, release, exceeded);
    }
    if (!(result instanceof Promise)) {
      return finish(c, endpoint, identity, result, undefined, release, exceeded);
    }
    return result.then(
      (response) => finish(c, endpoint, identity, response, undefined, release, exceeded),
      (e) => finish(c, endpoint, identity, undefined, e, release, exceeded),
    );
  };
}
