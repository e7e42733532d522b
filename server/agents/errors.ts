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
