/**
 * The request pipeline, in the contract's order, run for every route: match (the router,
 * `match.ts`, before this), authenticate, admit, duplicate query parameters, body limit, the
 * handler with its guards, and the audit entry. Each step is one file of this folder, a plain
 * function that throws {@linkcode ApiError}; this runner calls them in a straight line with no
 * per-request middleware chain, because the chain's dispatch was a measurable share of the
 * pipeline's cost (see `scripts/bench/pipeline.ts`).
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError, renderError } from "../errors.ts";
import type { EndpointHandler } from "./handler.ts";
import type { EndpointState, Identity } from "../policy/compile.ts";
import type { ServerEnv, ServerState } from "../state.ts";
import { type AdmissionLimits, admit, releaseWhenDone } from "./admit.ts";
import { type AuditSink, recordAudit } from "./audit.ts";
import { authenticate } from "./authenticate.ts";
import { limitBody } from "./body_limit.ts";
import { rejectDuplicateParameters } from "./duplicate_params.ts";
import { ConcurrencyLimiter, RateLimiter } from "./rate_limits.ts";

/**
 * An error as an {@linkcode ApiError}: unknown errors become `internal` (and are logged, since
 * their message may be all an operator gets).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { asApiError } from "./run.ts";
 * import { ApiError } from "../errors.ts";
 * const refusal = new ApiError("not_found", "No process 7");
 * assert.equal(asApiError(refusal), refusal);
 * ```
 */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  console.error(`sandbar: ${e.stack ?? e.message}`);
  return new ApiError("internal", `Internal error: ${e.message}`, { cause: e });
}

/** What one request has gathered on its way through the steps; `finish` reads it. */
interface RequestInFlight {
  /** Hono's context of the request. */
  readonly c: Context<ServerEnv>;
  /** The matched endpoint. */
  readonly endpoint: EndpointState;
  /** Who is calling, once authentication passed (never for `health`). */
  identity: Identity | undefined;
  /** Frees the concurrency slot admission took, if it took one. */
  release: (() => void) | undefined;
  /** Tells whether a streamed body passed the limit while the handler read it. */
  exceeded: (() => ApiError | undefined) | undefined;
}

/**
 * The pipeline for one server: returns, per endpoint, the route handler that runs every step.
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
    run: RequestInFlight,
    response: Response | undefined,
    error: unknown,
  ): Response => {
    // A handler that failed, or answered, after an over-limit body was cut off is answered
    // with the limit; nothing of its answer is sent.
    const over = run.exceeded?.();
    if (over) {
      response?.body?.cancel().catch(() => {});
      response = undefined;
      error = over;
    }
    if (response === undefined) {
      response = renderError(asApiError(error), run.c.req.path, run.endpoint.spec.id);
    }
    if (run.release) response = releaseWhenDone(response, run.release);
    recordAudit(run.endpoint, run.identity, setting, sink, response.status, error);
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
    const run: RequestInFlight = {
      c,
      endpoint,
      identity: undefined,
      release: undefined,
      exceeded: undefined,
    };
    let result: Response | Promise<Response>;
    try {
      const identity = run.identity = authenticate(req, endpoint, identities);
      if (identity) c.set("identity", identity);
      run.release = admit(endpoint, identity, limits);
      rejectDuplicateParameters(req.url);
      run.exceeded = limitBody(c, endpoint, bodyBytes);
      result = handler(c);
    } catch (e) {
      return finish(run, undefined, e);
    }
    if (!(result instanceof Promise)) return finish(run, result, undefined);
    return result.then(
      (response) => finish(run, response, undefined),
      (e) => finish(run, undefined, e),
    );
  };
}
