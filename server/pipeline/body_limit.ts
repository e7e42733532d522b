/**
 * Step 5 of the pipeline: the body limit, enforced before the body is read. A `Content-Length`
 * over the limit is refused at once; a body without one (chunked) is counted as it streams and
 * cut off with 413 `payload_too_large` the moment it passes the limit, so the handler never
 * holds more than the limit. The limit is the endpoint's `limits.body_bytes`, else the policy's
 * `limits.body_bytes` (10 MiB).
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError } from "../errors.ts";
import type { EndpointState } from "../policy/compile.ts";
import type { ServerEnv } from "../state.ts";

function tooLarge(limit: number): ApiError {
  return new ApiError("payload_too_large", `Request body is over the limit of ${limit} bytes`, {
    limit,
  });
}

/**
 * A body stream that errors with `payload_too_large` once more than `limit` bytes pass.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { limitStream } from "./body_limit.ts";
 * import type { ApiError } from "../errors.ts";
 * let refusal: ApiError | undefined;
 * const limited = new Response("hello").body!.pipeThrough(limitStream(3, (e) => refusal = e));
 * await assert.rejects(new Response(limited).text());
 * assert.equal(refusal?.code, "payload_too_large");
 * ```
 */
export function limitStream(
  limit: number,
  onExceeded: (e: ApiError) => void,
): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > limit) {
        const e = tooLarge(limit);
        onExceeded(e);
        controller.error(e);
        return;
      }
      controller.enqueue(chunk);
    },
  });
}

/**
 * The body-limit step. Returns, for a streamed body, a function that tells after the handler
 * whether the body passed the limit while it was being read.
 */
export function limitBody(
  c: Context<ServerEnv>,
  endpoint: EndpointState,
  defaultLimit: number,
): (() => ApiError | undefined) | undefined {
  // No GET handler reads a body, so there is nothing to limit; asking for one costs a call
  // into the runtime on every request of the busiest routes.
  if (endpoint.spec.method === "GET") return undefined;
  const req = c.req.raw;
  const limit = endpoint.limits.body_bytes ?? defaultLimit;
  // The declared length first: asking for `req.body` makes a stream, and a body then read
  // through it costs a bare POST about a quarter of its throughput (measured with wrk).
  const declared = req.headers.get("content-length");
  if (declared !== null) {
    const n = Number(declared);
    if (!Number.isFinite(n) || n < 0) {
      throw new ApiError("invalid_request", "Content-Length is not a number");
    }
    if (n > limit) throw tooLarge(limit);
    return undefined;
  }
  if (!req.body) return undefined;
  let exceeded: ApiError | undefined;
  c.req.raw = new Request(req, {
    body: req.body.pipeThrough(limitStream(limit, (e) => (exceeded = e))),
    // @ts-ignore: duplex is required for a streamed request body, and missing from the types.
    duplex: "half",
  });
  return () => exceeded;
}
