/**
 * The refusals of the `/v1/` routes. They are {@linkcode ApiError}s like every other refusal, so
 * the pipeline renders them in the OpenAI envelope `{error: {message, type, param, code}}` and
 * audits them; these helpers only keep the wording and the `param` consistent.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/** A request that can never succeed as sent (400), naming the field at fault. */
export function invalid(param: string | null, message: string): ApiError {
  return new ApiError("invalid_request", message, param === null ? {} : { param });
}

/** An unknown id (404), naming the path parameter that carried it. */
export function notFound(what: string, id: string, param: string): ApiError {
  return new ApiError("not_found", `No ${what} found with id '${id}'.`, { param });
}

/** A conflict a retry cannot fix (409; sent with `x-should-retry: false`). */
export function conflict(message: string, param?: string): ApiError {
  return new ApiError("conflict", message, param ? { param } : {});
}

/** The fields of an OpenAI error envelope. */
export interface EnvelopeFields {
  /** What went wrong, in words. */
  message: string;
  /** The OpenAI error type (`invalid_request_error`, `server_error`, …). */
  type: string;
  /** The field at fault, or null. */
  param: string | null;
  /** A machine code, or null. */
  code: string | null;
}

/**
 * An answer in the OpenAI envelope with any status: for what the upstream model provider
 * answered, passed on with its own status. A 4xx other than 408 and 429 carries
 * `x-should-retry: false`, since sending the same request again cannot change it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { envelopeResponse } from "./errors.ts";
 * const res = envelopeResponse(422, { message: "m", type: "invalid_request_error", param: null, code: null });
 * assert.equal(res.headers.get("x-should-retry"), "false");
 * ```
 */
export function envelopeResponse(status: number, error: EnvelopeFields): Response {
  const headers = new Headers({ "content-type": "application/json" });
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) {
    headers.set("x-should-retry", "false");
  }
  return new Response(JSON.stringify({ error }), { status, headers });
}
