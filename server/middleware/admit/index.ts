/**
 * Step 3 of the pipeline: admission by the policy. The endpoint rule first (404
 * `endpoint_disabled` with the `rule` that switched it off), then the identity's scopes (403
 * `missing_scope`), then rate and concurrency (429 with `Retry-After`).
 *
 * @module
 */

import { createMiddleware } from "hono/factory";
import { ApiError } from "../../errors.ts";
import { missingScope } from "../../policy/scopes.ts";
import type { ServerEnv } from "../../state.ts";
import { ConcurrencyLimiter, RateLimiter } from "./limits.ts";

/**
 * Release `release` when the response is done: at once for a plain body, at the end or cancel
 * of a streamed one.
 */
function releaseWhenDone(res: Response, release: () => void): Response {
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

/**
 * The admission middleware. One instance per server, shared by all routes.
 *
 * @example
 * ```ts ignore
 * const admitStep = admit();
 * app.on("POST", "/process/shell", admitStep, handler);
 * ```
 */
export function admit() {
  const rate = new RateLimiter();
  const concurrency = new ConcurrencyLimiter();
  return createMiddleware<ServerEnv>(async (c, next) => {
    const endpoint = c.var.endpoint;
    const id = endpoint.spec.id;
    if (!endpoint.enabled) {
      throw new ApiError("endpoint_disabled", `Endpoint ${id} is disabled`, {
        rule: endpoint.rule ?? undefined,
      });
    }
    if (endpoint.spec.public) return await next();
    const identity = c.var.identity;
    const lacking = missingScope(identity.scopes, endpoint.scopes);
    if (lacking) {
      throw new ApiError("missing_scope", `Identity ${identity.id} lacks scope ${lacking}`, {
        scope: lacking,
      });
    }
    const key = `${identity.id}\u0000${id}`;
    const { rate_per_minute: perMinute, concurrency: limit } = endpoint.limits;
    if (perMinute !== undefined) {
      const wait = rate.take(key, perMinute);
      if (wait > 0) {
        throw new ApiError("rate_limited", `Rate limit of ${perMinute}/min reached for ${id}`, {
          retryAfter: wait,
        });
      }
    }
    if (limit === undefined) return await next();
    const release = concurrency.acquire(key, limit);
    if (!release) {
      throw new ApiError("concurrency_limited", `${limit} requests to ${id} already in flight`, {
        retryAfter: 1,
      });
    }
    try {
      await next();
    } catch (e) {
      release();
      throw e;
    }
    c.res = releaseWhenDone(c.res, release);
  });
}
