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
import type { EndpointState } from "./policy/compile.ts";
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
  return (endpoint: EndpointState, handler: EndpointHandler) =>
  async (c: Context<ServerEnv>): Promise<Response> => {
    c.set("state", state);
    c.set("endpoint", endpoint);
    let release: (() => void) | undefined;
    let response: Response;
    let error: unknown;
    try {
      authenticate(c);
      release = admit(c, limits);
      rejectDuplicateParameters(c);
      const exceeded = limitBody(c);
      try {
        response = await handler(c);
      } catch (e) {
        // A handler that failed while reading an over-limit body failed because of the limit.
        throw exceeded?.() ?? e;
      }
      const over = exceeded?.();
      if (over) {
        await response.body?.cancel();
        throw over;
      }
    } catch (e) {
      error = e;
      response = renderError(asApiError(e), c.req.path, endpoint.spec.id);
    }
    if (release) response = releaseWhenDone(response, release);
    recordAudit(c, setting, sink, response.status, error);
    return response;
  };
}
