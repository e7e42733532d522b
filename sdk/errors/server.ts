/**
 * Errors raised because of a server answer: {@linkcode ServerAPIError} (E9000) and its
 * subclasses, one per family of server machine codes.
 *
 * @module
 */

import {
  ALSO_A,
  AuthenticationError,
  CapabilityNotSupportedError,
  NotFoundError,
  PermissionDeniedError,
  SandboxError,
  type SandboxErrorOptions,
  TimeoutError,
  ValidationError,
} from "./classes.ts";

/** What a server error carries besides its message. */
export interface ServerAPIErrorOptions extends SandboxErrorOptions {
  /** HTTP status; 0 when no request was made (a fail-fast refusal from cached capabilities). */
  status?: number;
  /** The server's machine code (`missing_scope`, `path_not_allowed`, …), when it sent one. */
  serverCode?: string | null;
  /** The endpoint id the refusal concerns. */
  endpoint?: string | null;
  /** The layer that switched an endpoint off (`policy:…`, `preset:…`, `code:…`, …). */
  rule?: string | null;
  /** The request parameter at fault. */
  param?: string | null;
  /** The scope that was missing (`missing_scope`). */
  scope?: string | null;
  /** The limit that was exceeded, in bytes (`payload_too_large`). */
  limit?: number | null;
  /** Seconds to wait before retrying, from `Retry-After` (429). */
  retryAfter?: number | null;
}

/**
 * Any error answer of the server (E9000); the base of the server error classes. An answer
 * with a machine code the SDK does not know, or a 5xx, is raised as this class itself.
 */
export class ServerAPIError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9000";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "The server failed; its stderr has the details. Retry, and report it if it persists.";

  /** HTTP status; 0 when the refusal came from cached capabilities without a request. */
  readonly status: number;
  /** The server's machine code, when it sent one. */
  readonly serverCode: string | null;
  /** The endpoint id the answer concerns, when known. */
  readonly endpoint: string | null;
  /** The rule that switched the endpoint off, for `endpoint_disabled`. */
  readonly rule: string | null;
  /** The request parameter at fault, when the server named one. */
  readonly param: string | null;

  /** Make a server error. */
  constructor(message: string, options: ServerAPIErrorOptions = {}) {
    super(message, options);
    this.status = options.status ?? 0;
    this.serverCode = options.serverCode ?? null;
    this.endpoint = options.endpoint ?? null;
    this.rule = options.rule ?? null;
    this.param = options.param ?? null;
  }
}

/**
 * The server refused the credentials (E9001): 401 `unauthorized`, or 400
 * `ambiguous_credentials`. Also an {@linkcode AuthenticationError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuthenticationError, ServerAuthError } from "@sandbar/sandbar/sdk";
 * assert.ok(new ServerAuthError("Invalid token", { status: 401 }) instanceof AuthenticationError);
 * ```
 */
export class ServerAuthError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9001";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Pass the server's token as `new ServerClient(url, { token })` (sent as Authorization: " +
    "Bearer); for a sandbox server it comes from SVC_SERVER_TOKEN.";
}

/**
 * The policy refused the call (E9002): a missing scope, a command, program, environment
 * variable, URL or language the policy does not allow. `scope` names the missing scope.
 */
export class PolicyDeniedError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9002";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "The server's policy refuses this; client.check(endpoint, path) explains a decision " +
    "without running anything, and the policy file is where to change it.";

  /** The scope the identity lacks, for `missing_scope`. */
  readonly scope: string | null;

  /** Make a policy refusal. */
  constructor(message: string, options: ServerAPIErrorOptions = {}) {
    super(message, options);
    this.scope = options.scope ?? null;
  }
}

/**
 * The path policy refused a path (E9002 family): `path_not_allowed`, `path_denied`,
 * `read_only`, `symlink_denied`, `extension_not_allowed`. A subclass of
 * {@linkcode PolicyDeniedError}, and also a {@linkcode PermissionDeniedError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FilePolicyDeniedError, PermissionDeniedError } from "@sandbar/sandbar/sdk";
 * assert.ok(new FilePolicyDeniedError("outside", { status: 403 }) instanceof PermissionDeniedError);
 * ```
 */
export class FilePolicyDeniedError extends PolicyDeniedError {
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Use a path inside the policy's paths.allow (client.capabilities.paths(endpoint) lists " +
    "them, client.check(endpoint, path, op) decides one) or change the policy.";
}

/**
 * The endpoint is off or unknown (E9003): 404 `endpoint_disabled`; `rule` names the layer
 * that switched it off. Also a {@linkcode CapabilityNotSupportedError}.
 */
export class EndpointNotAvailableError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9003";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "The endpoint is switched off on this server; `rule` says by what (policy:… is the " +
    "policy file's endpoints entry, preset:… the preset, default:opt-in:… an opt-in group).";
}

/**
 * The body or file is over a limit (E9004); `limit` is the limit in bytes.
 */
export class PayloadTooLargeError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9004";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Send less than `limit` bytes, or raise limits.body_bytes (or the endpoint's " +
    "limits.body_bytes) in the policy; files.uploadFile streams large files to /files.";

  /** The limit that was exceeded, in bytes. */
  readonly limit: number | null;

  /** Make a payload-too-large error. */
  constructor(message: string, options: ServerAPIErrorOptions = {}) {
    super(message, options);
    this.limit = options.limit ?? null;
  }
}

/**
 * A rate or concurrency limit is exhausted (E9005): 429 `rate_limited` or
 * `concurrency_limited`; `retryAfter` is the `Retry-After` header in seconds.
 */
export class RateLimitedError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9005";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Wait `retryAfter` seconds and retry, or raise the endpoint's limits in the policy.";

  /** Seconds to wait before a retry may succeed, from `Retry-After`. */
  readonly retryAfter: number | null;

  /** Make a rate-limit error. */
  constructor(message: string, options: ServerAPIErrorOptions = {}) {
    super(message, options);
    this.retryAfter = options.retryAfter ?? null;
  }
}

/**
 * The named command does not exist on the server (404 `command_not_found`, E9006). Also a
 * {@linkcode NotFoundError}.
 */
export class CommandNotFoundError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9006";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "client.commands.list() (or sandbox.listCommands()) shows the registered names.";
}

/**
 * Something the request named does not exist on the server (404 `not_found`: a file, a
 * process, a terminal, or a route; E9007). Also a {@linkcode NotFoundError}.
 */
export class ServerNotFoundError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9007";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Check the path or id; list the directory, processes or terminals to see what exists.";
}

/**
 * The server rejected the request's input (400: `invalid_request`, `invalid_arguments`,
 * `invalid_path`, `command_invalid`, `duplicate_parameter`, …; E9008). Also a
 * {@linkcode ValidationError}.
 */
export class ServerValidationError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9008";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Fix the parameter named by `param`; the server's message says what it expected.";
}

/**
 * The request conflicts with the server's state (409 `file_exists`, `conflict`; E9009), for
 * example an upload with `overwrite: false` onto an existing file.
 */
export class ConflictError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9009";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Pass overwrite: true, pick another name, or wait for the conflicting operation.";
}

/**
 * A deadline the server applied ran out (504 `timeout`, E9010): the operation's own `timeout`
 * parameter, not the client's request timeout. Also a {@linkcode TimeoutError}.
 */
export class ServerTimeoutError extends ServerAPIError {
  /** The stable error code of this class. */
  static override readonly code: string = "E9010";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Pass a longer `timeout` to the operation (for example process.shell(cmd, { timeout })); " +
    "for long work use process.start and process.wait instead.";
}

// The contract's "is also a" pairs, plus the generic 404/400/504 families.
ALSO_A.set(AuthenticationError, [ServerAuthError]);
ALSO_A.set(PermissionDeniedError, [FilePolicyDeniedError]);
ALSO_A.set(CapabilityNotSupportedError, [EndpointNotAvailableError]);
ALSO_A.set(NotFoundError, [CommandNotFoundError, ServerNotFoundError]);
ALSO_A.set(ValidationError, [ServerValidationError]);
ALSO_A.set(TimeoutError, [ServerTimeoutError]);
