/**
 * What a call the server makes on an identity's behalf needs of that identity's policy: an
 * agent's `shell` tool runs as the `shell` endpoint would for the session's owner, a stdio MCP
 * server as `process_start` would. The same two checks the pipeline makes of a request (the
 * scope, the endpoint being on), declared as data by each caller and made here once, so a tool
 * or a transport cannot forget one or word it differently.
 *
 * @module
 */

import type { EndpointId } from "../endpoints.ts";
import { ApiError } from "../errors.ts";
import type { CompiledPolicy, Identity } from "./compile.ts";
import { missingScope } from "./scopes.ts";

/** What an action needs: a scope, and optionally the endpoint it runs as. */
export interface ActionPolicy {
  /** The scope the identity must hold (`process:run`). */
  readonly scope: string;
  /** The action, for messages ("Running commands"). */
  readonly doing: string;
  /** The endpoint the action runs as; refused when the policy turns it off. */
  readonly endpoint?: EndpointId;
}

/**
 * Refuse with `missing_scope` unless `identity` holds the action's scope (an identity the policy
 * no longer has holds none), then with `endpoint_disabled` when the endpoint it runs as is off.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compilePolicy } from "./compile.ts";
 * import { requireAction } from "./on_behalf.ts";
 * const policy = compilePolicy({ preset: "readonly" }, {
 *   root: "/workspace", env: {}, implemented: new Set(["shell"]),
 *   defaultToken: "0123456789abcdef0123", configured: true,
 * });
 * const reader = { ...policy.identities[0], scopes: ["files:read"] };
 * const shell = { scope: "process:run", doing: "Running commands", endpoint: "shell" } as const;
 * assert.throws(() => requireAction(policy, reader, shell), /needs the scope process:run/);
 * const runner = { ...reader, scopes: ["process:run"] };
 * assert.throws(() => requireAction(policy, runner, shell), /shell endpoint does/);
 * ```
 */
export function requireAction(
  policy: CompiledPolicy,
  identity: Identity | undefined,
  action: ActionPolicy,
): void {
  const missing = identity ? missingScope(identity.scopes, [action.scope]) : action.scope;
  if (missing) {
    throw new ApiError("missing_scope", `${action.doing} needs the scope ${missing}`, {
      scope: missing,
    });
  }
  if (action.endpoint === undefined) return;
  const endpoint = policy.endpoints.get(action.endpoint);
  if (!endpoint?.enabled) {
    throw new ApiError(
      "endpoint_disabled",
      `${action.doing} runs as the ${action.endpoint} endpoint does, which this policy turns off`,
      { endpoint: action.endpoint, rule: endpoint?.rule ?? undefined },
    );
  }
}
