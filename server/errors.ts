/**
 * The server's error type and its two wire shapes.
 *
 * Every refusal in the pipeline and in every guard is an {@linkcode ApiError} carrying the
 * contract's machine code; `renderError` turns it into the flat body
 * `{error, type, code, endpoint, rule}` or, under `/v1/`, the OpenAI envelope
 * `{error: {message, type, param, code}}`.
 *
 * @module
 */

import { nearestName } from "../shared/nearest_name.ts";

/** The machine codes of the contract, plus the few this server adds (documented in the README). */
export type ErrorCode =
  | "unauthorized"
  | "ambiguous_credentials"
  | "endpoint_disabled"
  | "missing_scope"
  | "scope_required"
  | "path_not_allowed"
  | "path_denied"
  | "read_only"
  | "symlink_denied"
  | "invalid_path"
  | "command_not_allowed"
  | "command_invalid"
  | "process_invalid"
  | "process_denied"
  | "env_var_denied"
  | "env_var_not_allowed"
  | "env_invalid"
  | "url_invalid"
  | "url_denied"
  | "language_not_allowed"
  | "extension_not_allowed"
  | "file_exists"
  | "payload_too_large"
  | "rate_limited"
  | "concurrency_limited"
  | "duplicate_parameter"
  // Added by this server, for conditions the contract does not name.
  | "not_found"
  | "invalid_request"
  | "invalid_arguments"
  | "command_not_found"
  | "conflict"
  | "timeout"
  | "internal";

/** HTTP status of each code. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  unauthorized: 401,
  ambiguous_credentials: 400,
  endpoint_disabled: 404,
  missing_scope: 403,
  scope_required: 403,
  path_not_allowed: 403,
  path_denied: 403,
  read_only: 403,
  symlink_denied: 403,
  invalid_path: 400,
  command_not_allowed: 403,
  command_invalid: 400,
  process_invalid: 400,
  process_denied: 403,
  env_var_denied: 403,
  env_var_not_allowed: 403,
  env_invalid: 400,
  url_invalid: 400,
  url_denied: 403,
  language_not_allowed: 403,
  extension_not_allowed: 403,
  file_exists: 409,
  payload_too_large: 413,
  rate_limited: 429,
  concurrency_limited: 429,
  duplicate_parameter: 400,
  not_found: 404,
  invalid_request: 400,
  invalid_arguments: 400,
  command_not_found: 404,
  conflict: 409,
  timeout: 504,
  internal: 500,
};

/** The exception name sent as `type` in the flat error body, by code. */
const TYPE_NAMES: Partial<Record<ErrorCode, string>> = {
  unauthorized: "AuthenticationError",
  ambiguous_credentials: "AuthenticationError",
  endpoint_disabled: "EndpointNotAvailableError",
  payload_too_large: "PayloadTooLargeError",
  rate_limited: "RateLimitedError",
  concurrency_limited: "RateLimitedError",
  not_found: "NotFoundError",
  command_not_found: "CommandNotFoundError",
  invalid_request: "ValidationError",
  invalid_arguments: "ValidationError",
  duplicate_parameter: "ValidationError",
  invalid_path: "ValidationError",
  command_invalid: "ValidationError",
  process_invalid: "ValidationError",
  env_invalid: "ValidationError",
  url_invalid: "ValidationError",
  file_exists: "ConflictError",
  conflict: "ConflictError",
  timeout: "TimeoutError",
  internal: "InternalError",
};

/** Options of an {@linkcode ApiError} beyond its code and message. */
export interface ApiErrorOptions {
  /** The endpoint id the refusal concerns. */
  endpoint?: string;
  /** The layer that switched an endpoint off (`policy:…`, `preset:…`, `code:…`, `env:…`, `default:…`). */
  rule?: string;
  /** The request parameter at fault, for the `/v1/` envelope and the SDK. */
  param?: string;
  /** The scope that was missing, for `missing_scope`. */
  scope?: string;
  /** The limit that was exceeded, for `payload_too_large`. */
  limit?: number;
  /** Seconds until a retry may succeed; sent as `Retry-After`. */
  retryAfter?: number;
  /** Underlying cause, kept for logs only; never sent. */
  cause?: unknown;
}

/**
 * A refusal or failure with the contract's machine code.
 *
 * @example The status comes from the code
 * ```ts
 * import assert from "node:assert/strict";
 * import { ApiError } from "./errors.ts";
 * const e = new ApiError("path_not_allowed", "Path /etc is outside the allowed directories", {
 *   param: "path",
 * });
 * assert.equal(e.status, 403);
 * assert.equal(e.name, "PolicyDeniedError");
 * ```
 */
export class ApiError extends Error {
  /** The machine code. */
  readonly code: ErrorCode;
  /** The HTTP status, from the code. */
  readonly status: number;
  /** Everything else the body may carry. */
  readonly options: ApiErrorOptions;

  /** Make an error with a code, a message and options. */
  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = TYPE_NAMES[code] ?? "PolicyDeniedError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.options = options;
  }
}

/** OpenAI error `type` by status, for the `/v1/` envelope. */
function openAiType(status: number): string {
  if (status === 400 || status === 413) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 409) return "conflict_error";
  if (status === 429) return "rate_limit_error";
  return "server_error";
}

/**
 * The HTTP response for an error, flat or (under `/v1/`) in the OpenAI envelope.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { ApiError, renderError } from "./errors.ts";
 * const res = renderError(new ApiError("unauthorized", "Missing token"), "/files", "files_list");
 * assert.equal(res.status, 401);
 * assert.deepEqual(await res.json(), {
 *   error: "Missing token",
 *   type: "AuthenticationError",
 *   code: "unauthorized",
 *   endpoint: "files_list",
 * });
 * ```
 */
export function renderError(error: ApiError, path: string, endpoint?: string): Response {
  const headers = new Headers({ "content-type": "application/json" });
  if (error.options.retryAfter !== undefined) {
    headers.set("retry-after", String(Math.max(1, Math.ceil(error.options.retryAfter))));
  }
  const endpointId = error.options.endpoint ?? endpoint;
  let body: unknown;
  if (path.startsWith("/v1/")) {
    // The official client retries 409 and 429 by default; a policy refusal is final, and so is
    // any other 4xx but a rate limit: the same request cannot get another answer.
    if (
      (error.status >= 400 && error.status < 500 && error.code !== "rate_limited") ||
      error.code === "concurrency_limited"
    ) {
      headers.set("x-should-retry", "false");
    }
    body = {
      error: {
        message: error.message,
        type: openAiType(error.status),
        param: error.options.param ?? null,
        code: error.code,
      },
    };
  } else {
    const flat: Record<string, unknown> = { error: error.message, type: error.name };
    // Every answer carries its machine code, so a client never has to guess from the status;
    // `endpoint` is left out only when no route matched (an unknown path names no endpoint).
    flat.code = error.code;
    if (endpointId) flat.endpoint = endpointId;
    if (error.options.rule) flat.rule = error.options.rule;
    if (error.options.param) flat.param = error.options.param;
    if (error.options.scope) flat.scope = error.options.scope;
    if (error.options.limit !== undefined) flat.limit = error.options.limit;
    if (error.options.retryAfter !== undefined) {
      flat.retry_after = Math.max(1, Math.ceil(error.options.retryAfter));
    }
    body = flat;
  }
  return new Response(JSON.stringify(body), { status: error.status, headers });
}

/** How many known names an unknown-name refusal lists at most. */
const MAX_LISTED = 40;

/**
 * The refusal of an unknown field (or command argument), naming it and the nearest known one, or
 * listing the known ones when none is close;
 * `what` and `where` word it for other things than body fields.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unknownField } from "./errors.ts";
 * const e = unknownField("recursiv", ["path", "recursive"]);
 * assert.equal(e.message, 'Unknown field "recursiv"; did you mean "recursive"?');
 * assert.equal(e.options.param, "recursiv");
 * assert.equal(
 *   unknownField("command", ["cmd", "cwd"]).message,
 *   'Unknown field "command"; the known fields are "cmd", "cwd"',
 * );
 * ```
 */
export function unknownField(
  name: string,
  known: readonly string[],
  what = "field",
  where = "",
): ApiError {
  const near = nearestName(name, known);
  // With no close name, the known ones are listed: a caller who wrote `command` for `cmd` learns
  // the right name here, not from the docs.
  const listed = known.length > MAX_LISTED
    ? `${known.slice(0, MAX_LISTED).map((k) => JSON.stringify(k)).join(", ")}, …`
    : known.map((k) => JSON.stringify(k)).join(", ");
  const hint = near !== undefined
    ? `; did you mean ${JSON.stringify(near)}?`
    : known.length > 0
    ? `; the known ${what}s are ${listed}`
    : "";
  const message = `Unknown ${what} ${JSON.stringify(name)}${where}${hint}`;
  return new ApiError("invalid_arguments", message, { param: name });
}
