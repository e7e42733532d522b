/**
 * Server machine code → error class, and turning an error response into the right error.
 *
 * | server code(s) | class |
 * |---|---|
 * | `unauthorized`, `ambiguous_credentials` | ServerAuthError (E9001) |
 * | `missing_scope`, `scope_required`, `command_not_allowed`, `process_denied`, `env_var_denied`, `env_var_not_allowed`, `url_denied`, `language_not_allowed` | PolicyDeniedError (E9002) |
 * | `path_not_allowed`, `path_denied`, `read_only`, `symlink_denied`, `extension_not_allowed` | FilePolicyDeniedError (E9002) |
 * | `endpoint_disabled` | EndpointNotAvailableError (E9003) |
 * | `payload_too_large` | PayloadTooLargeError (E9004) |
 * | `rate_limited`, `concurrency_limited` | RateLimitedError (E9005) |
 * | `command_not_found` | CommandNotFoundError (E9006) |
 * | `not_found` | ServerNotFoundError (E9007) |
 * | `invalid_request`, `invalid_arguments`, `invalid_path`, `command_invalid`, `process_invalid`, `env_invalid`, `url_invalid`, `duplicate_parameter` | ServerValidationError (E9008) |
 * | `file_exists`, `conflict` | ConflictError (E9009) |
 * | `timeout` | ServerTimeoutError (E9010) |
 * | `internal`, and any code this SDK does not know | ServerAPIError (E9000) |
 *
 * @module
 */

import {
  CommandNotFoundError,
  ConflictError,
  EndpointNotAvailableError,
  FilePolicyDeniedError,
  PayloadTooLargeError,
  PolicyDeniedError,
  RateLimitedError,
  ServerAPIError,
  type ServerAPIErrorOptions,
  ServerAuthError,
  ServerNotFoundError,
  ServerTimeoutError,
  ServerValidationError,
} from "./server.ts";

/** A server error class: what {@linkcode SERVER_ERROR_CLASSES} maps a code to. */
export type ServerErrorClass = new (
  message: string,
  options?: ServerAPIErrorOptions,
) => ServerAPIError;

/**
 * Every machine code the server sends, mapped to exactly one class. A test compares the keys
 * with the server's own list.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SERVER_ERROR_CLASSES } from "./server_codes.ts";
 * assert.equal(SERVER_ERROR_CLASSES.path_not_allowed.name, "FilePolicyDeniedError");
 * ```
 */
export const SERVER_ERROR_CLASSES: Readonly<Record<string, ServerErrorClass>> = {
  unauthorized: ServerAuthError,
  ambiguous_credentials: ServerAuthError,
  endpoint_disabled: EndpointNotAvailableError,
  missing_scope: PolicyDeniedError,
  scope_required: PolicyDeniedError,
  path_not_allowed: FilePolicyDeniedError,
  path_denied: FilePolicyDeniedError,
  read_only: FilePolicyDeniedError,
  symlink_denied: FilePolicyDeniedError,
  invalid_path: ServerValidationError,
  command_not_allowed: PolicyDeniedError,
  command_invalid: ServerValidationError,
  process_invalid: ServerValidationError,
  process_denied: PolicyDeniedError,
  env_var_denied: PolicyDeniedError,
  env_var_not_allowed: PolicyDeniedError,
  env_invalid: ServerValidationError,
  url_invalid: ServerValidationError,
  url_denied: PolicyDeniedError,
  language_not_allowed: PolicyDeniedError,
  extension_not_allowed: FilePolicyDeniedError,
  file_exists: ConflictError,
  payload_too_large: PayloadTooLargeError,
  rate_limited: RateLimitedError,
  concurrency_limited: RateLimitedError,
  duplicate_parameter: ServerValidationError,
  not_found: ServerNotFoundError,
  invalid_request: ServerValidationError,
  invalid_arguments: ServerValidationError,
  command_not_found: CommandNotFoundError,
  conflict: ConflictError,
  timeout: ServerTimeoutError,
  internal: ServerAPIError,
};

/** Suggestions more precise than the class default, by server code. */
const SUGGESTIONS: Readonly<Record<string, string>> = {
  ambiguous_credentials:
    "Send one token: either Authorization: Bearer or X-Access-Token, or both with the same value.",
  scope_required:
    "This named command is guarded: name a scope for it in the policy's commands.<name>.scopes.",
  command_not_allowed:
    "Every program of the shell string must pass the policy's allow_commands / deny_commands.",
  env_var_denied: "Drop the refused variable (LD_PRELOAD and friends are denied by default).",
  env_var_not_allowed: "Only the variables in the policy's env.allow may be passed or set.",
  url_denied:
    "The policy's url_allow / url_deny (and the private-network rule) refuse this URL; add it " +
    "to url_allow if it is meant to be reachable.",
  language_not_allowed: "Use a language listed in capabilities.param('run_code', 'languages').",
  extension_not_allowed:
    "The policy's upload.allow_extensions / deny_extensions refuse this file name.",
  read_only: "The path is under paths.read_only: read it, but write elsewhere.",
  symlink_denied: "The policy's paths.symlinks refuses this link; use the real path.",
  invalid_path: "Give an absolute or root-relative path without NUL bytes, under limits.path_max.",
  missing_path: "Create the directory first (files.makeDir, or mkdir -p in a command), or name " +
    "one that exists; a relative path is under the server's root.",
  duplicate_parameter: "Send each query parameter once.",
  concurrency_limited:
    "Too many requests to this endpoint are in flight: wait for one to finish, then retry.",
  file_exists: "Pass overwrite: true to replace the file.",
};

/** The suggestion for `code`; a path that is not there is told to make it, not to check its bytes. */
function suggestionFor(code: string, message: string): { suggestion?: string } {
  const key = code === "invalid_path" && /does not exist|not a directory/.test(message)
    ? "missing_path"
    : code;
  return Object.hasOwn(SUGGESTIONS, key) ? { suggestion: SUGGESTIONS[key] } : {};
}

/**
 * Fallbacks for answers without a machine code. The server puts `code` on every error answer,
 * 404s and 500s included (`endpoint` too, except on a 404 for a path no route matches), so
 * these serve answers it did not write: a proxy or gateway in front of it, a non-JSON body.
 */
function codeFromStatus(status: number, type: string | undefined): string {
  if (type === "NotFoundError" || status === 404) return "not_found";
  if (status === 401) return "unauthorized";
  if (status === 413) return "payload_too_large";
  if (status === 429) return "rate_limited";
  if (status === 409) return "conflict";
  if (status === 504) return "timeout";
  if (status === 400 || status === 422) return "invalid_request";
  return "internal";
}

/** Seconds from a `Retry-After` header (delta-seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | null): number | null {
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/**
 * The error for a server's error answer. `body` is the parsed JSON body (flat, or the `/v1/`
 * envelope `{error: {message, type, param, code}}`), or the raw text when it was not JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PolicyDeniedError } from "@sandbar/sandbar/sdk";
 * import { errorFromResponse } from "./server_codes.ts";
 * const e = errorFromResponse(
 *   403,
 *   { error: "lacks scope", type: "PolicyDeniedError", code: "missing_scope", scope: "files:read" },
 *   new Headers(),
 * );
 * assert.equal(e.name, "PolicyDeniedError");
 * assert.equal((e as PolicyDeniedError).scope, "files:read");
 * ```
 */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: Headers,
  endpoint?: string,
): ServerAPIError {
  let fields: Record<string, unknown> = {};
  let message: string;
  if (typeof body === "object" && body !== null) {
    const top = body as Record<string, unknown>;
    if (typeof top.error === "object" && top.error !== null) {
      fields = top.error as Record<string, unknown>; // the /v1/ envelope
      message = str(fields.message) ?? `HTTP ${status}`;
    } else {
      fields = top;
      message = str(top.error) ?? `HTTP ${status}`;
    }
  } else {
    const text = typeof body === "string" ? body.trim().slice(0, 500) : "";
    message = text === "" ? `HTTP ${status}` : `HTTP ${status}: ${text}`;
  }
  const type = str(fields.type) ?? undefined;
  const given = str(fields.code);
  const code = given !== null && Object.hasOwn(SERVER_ERROR_CLASSES, given)
    ? given
    : given ?? codeFromStatus(status, type);
  const cls = Object.hasOwn(SERVER_ERROR_CLASSES, code) ? SERVER_ERROR_CLASSES[code] : undefined;
  const retryAfter = parseRetryAfter(headers.get("retry-after")) ?? num(fields.retry_after);
  const options: ServerAPIErrorOptions = {
    status,
    serverCode: given ?? code,
    endpoint: str(fields.endpoint) ?? endpoint ?? null,
    rule: str(fields.rule),
    param: str(fields.param),
    scope: str(fields.scope),
    limit: num(fields.limit),
    retryAfter,
    ...suggestionFor(code, message),
  };
  return new (cls ?? ServerAPIError)(message, options);
}
