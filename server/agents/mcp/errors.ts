/**
 * The errors of MCP tools. Every failure to use a server (a guard's refusal, a credential that
 * cannot be used, a server that does not start or answer) is a {@linkcode McpServerError}
 * naming the server and carrying a machine code: the guard's own (`url_denied`,
 * `process_denied`, `command_invalid`, `env_var_denied`, `invalid_path`, `missing_scope`,
 * `endpoint_disabled`, …) or one of {@linkcode McpErrorCode}. A `required` server's failure is
 * a {@linkcode McpRequiredServerError}, with which `openMcpTools` rejects.
 *
 * No message carries a secret: tokens are never put in one, and text that comes from outside
 * (a server's stderr, a token endpoint's answer) is passed through {@linkcode redact} first.
 *
 * @module
 */

import type { ApiError } from "../../errors.ts";

/** Codes of failures that are not a guard's refusal. */
export type McpErrorCode =
  /** The agent's entry cannot be used as given (a duplicate `server_label`, a bad `env_vars`). */
  | "mcp_config_invalid"
  /** `credential_id` names no credential (in the session's vaults). */
  | "credential_not_found"
  /** The credential's type or `mcp_server_url` does not fit this server. */
  | "credential_invalid"
  /** Refreshing an OAuth access token failed. */
  | "credential_refresh_failed"
  /** The server answered 401/403 to the credential (or to none). */
  | "mcp_unauthorized"
  /** The server did not start, exited, or could not be reached. */
  | "mcp_unavailable"
  /** The server did not answer in time. */
  | "mcp_timeout"
  /** The server answered something that is not MCP. */
  | "mcp_protocol_error";

/** Options of a {@linkcode McpServerError}. */
export interface McpServerErrorOptions {
  /** The guard rule that refused, when a guard did. */
  rule?: string;
  /** The field of the agent's tool entry at fault (`transport.command`, `credential_id`). */
  param?: string;
  /** The underlying error, for logs only. */
  cause?: unknown;
}

/**
 * A server of an agent's `mcp` tools that could not be used.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpServerError } from "./errors.ts";
 * const e = new McpServerError("docs", "url_denied", "URL http://10.0.0.1/ is refused");
 * assert.equal(e.message, "MCP server 'docs': URL http://10.0.0.1/ is refused");
 * assert.equal(e.code, "url_denied");
 * ```
 */
export class McpServerError extends Error {
  /** The agent's `server_label`. */
  readonly serverLabel: string;
  /** A guard's code or an {@linkcode McpErrorCode}. */
  readonly code: string;
  /** The guard rule that refused, if one did. */
  readonly rule?: string;
  /** The field of the tool entry at fault, if one is. */
  readonly param?: string;

  /** Make the error; the message is prefixed with the server's label. */
  constructor(
    serverLabel: string,
    code: McpErrorCode | string,
    message: string,
    options: McpServerErrorOptions = {},
  ) {
    super(`MCP server '${serverLabel}': ${message}`, { cause: options.cause });
    this.name = "McpServerError";
    this.serverLabel = serverLabel;
    this.code = code;
    this.rule = options.rule;
    this.param = options.param;
  }

  /** A guard's {@linkcode ApiError} as this server's error, keeping its code and rule. */
  static fromApiError(serverLabel: string, e: ApiError, param?: string): McpServerError {
    return new McpServerError(serverLabel, e.code, e.message, {
      rule: e.options.rule,
      param: param ?? e.options.param,
      cause: e,
    });
  }
}

/**
 * A server marked `required: true` that could not be used: the turn cannot run. The runtime
 * fails it with this message (the turn error code `connection_failed` fits).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpRequiredServerError, McpServerError } from "./errors.ts";
 * const cause = new McpServerError("git", "mcp_unavailable", "exited with 1 before it answered");
 * const e = new McpRequiredServerError(cause);
 * assert.equal(e.serverLabel, "git");
 * assert.match(e.message, /required MCP server 'git' could not be used/);
 * ```
 */
export class McpRequiredServerError extends McpServerError {
  /** The failure itself. */
  readonly failure: McpServerError;

  /** Wrap the failure of a required server. */
  constructor(failure: McpServerError) {
    super(failure.serverLabel, failure.code, "", { rule: failure.rule, param: failure.param });
    this.message = `The required MCP server '${failure.serverLabel}' could not be used: ${
      failure.message.replace(`MCP server '${failure.serverLabel}': `, "")
    }`;
    this.name = "McpRequiredServerError";
    this.failure = failure;
  }
}

/**
 * `text` with every secret of `secrets` (of 4 characters or more) replaced by `[redacted]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redact } from "./errors.ts";
 * assert.equal(redact("bad token abcd1234", ["abcd1234"]), "bad token [redacted]");
 * ```
 */
export function redact(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const s of secrets) {
    if (s.length >= 4) out = out.split(s).join("[redacted]");
  }
  return out;
}
