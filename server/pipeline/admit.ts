/**
 * Step 3 of the pipeline: admission by the policy. The endpoint rule first (404
 * `endpoint_disabled` with the `rule` that switched it off), then the identity's scopes (403
 * `missing_scope`), then rate and concurrency (429 with `Retry-After`).
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { EndpointState, Identity } from "../policy/compile.ts";
import { missingScope } from "../policy/scopes.ts";
import type { ConcurrencyLimiter, RateLimiter } from "./rate_limits.ts";

/**
 * Release `release` when the response is done: at once for a plain body, at the end or cancel
 * of a streamed one.
 */
export function releaseWhenDone(res: Response, release: () => void): Response {
  if (!res.body) {
    release();
    return res;
  }
  const body = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      flush() {
        release();
      },
      cancel() {
        release();
      },
    }),
  );
  return new Response(body, res);
}

/** Rate and concurrency state shared by every route of one server. */
export interface AdmissionLimits {
  /** Token buckets. */
  rate: RateLimiter;
  /** In-flight counters. */
  concurrency: ConcurrencyLimiter;
}

/**
 * The admission step. Returns the release function of a concurrency slot when one was taken;
 * the runner releases it when the response (or its streamed body) ends.
 */
export function admit(
  endpoint: EndpointState,
  identity: Identity | undefined,
  limits: AdmissionLimits,
): (() => void) | undefined {
  const id = endpoint.spec.id;
  if (!endpoint.enabled) {
    throw new ApiError("endpoint_disabled", `Endpoint ${id} is disabled`, {
      rule: endpoint.rule ?? undefined,
    });
  }
  // Only a public endpoint (`health`) comes here without an identity.
  if (endpoint.spec.public || identity === undefined) return undefined;
  const lacking = missingScope(identity.scopes, endpoint.scopes);
  if (lacking) {
    throw new ApiError("missing_scope", `Identity ${identity.id} lacks scope ${lacking}`, {
      scope: lacking,
    });
  }
  const { rate_per_minute: perMinute, concurrency: limit } = endpoint.limits;
  if (perMinute === undefined && limit === undefined) return undefined;
  const key = `${identity.id}\u0000${id}`;
  if (perMinute !== undefined) {
    const wait = limits.rate.take(key, perMinute);
    if (wait > 0) {
      throw new ApiError("rate_limited", `Rate limit of ${perMinute}/min reached for ${id}`, {
        retryAfter: wait,
      });
    }
  }
  if (limit === undefined) return undefined;
  const release = limits.concurrency.acquire(key, limit);
  if (!release) {
    throw new ApiError("concurrency_limited", `${limit} requests to ${id} already in flight`, {
      retryAfter: 1,
    });
  }
  return release;
}
