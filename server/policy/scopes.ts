/**
 * Scope matching. Scopes are `family:action` strings (`files:read`, `process:run`); an identity
 * holding `*` has every scope and one holding `files:*` has every `files:` scope.
 *
 * @module
 */

/**
 * The operator scope of the agents group: an identity that holds it (also through `agents:*` or
 * `*`) sees and touches every identity's agents resources. Without it an identity sees only its
 * own (`server/agents/tenants.ts`).
 */
export const AGENTS_ADMIN_SCOPE = "agents:admin";

/**
 * The first required scope the granted list does not cover, or undefined when all are covered.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingScope } from "./scopes.ts";
 * assert.equal(missingScope(["files:*"], ["files:write"]), undefined);
 * assert.equal(missingScope(["files:read"], ["files:write"]), "files:write");
 * ```
 */
export function missingScope(
  granted: readonly string[],
  required: readonly string[],
): string | undefined {
  for (const need of required) {
    if (!covers(granted, need)) return need;
  }
  return undefined;
}

/**
 * Whether a granted list covers one scope.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { covers } from "./scopes.ts";
 * assert.equal(covers(["*"], "browser:use"), true);
 * assert.equal(covers(["files:*"], "browser:use"), false);
 * ```
 */
export function covers(granted: readonly string[], scope: string): boolean {
  if (granted.includes("*") || granted.includes(scope)) return true;
  const colon = scope.indexOf(":");
  return colon > 0 && granted.includes(`${scope.slice(0, colon)}:*`);
}
