/**
 * Tenants of the agents group: every resource has an owner, the identity that made it (a child,
 * such as a credential or a session's turn, has its parent's). An identity sees and touches only
 * its own: lists are filtered by owner, and another owner's id answers exactly as a missing one
 * (the same 404, the same body), so an id says nothing about whether it exists. An identity
 * holding the operator scope {@linkcode AGENTS_ADMIN_SCOPE} sees every owner's resources, as a
 * project's admin does in the OpenAI API. Models and the upstream stay server-wide.
 *
 * Every lookup a request makes goes through {@linkcode tenantOf}: the owner to record on what it
 * creates, and the owner filter (undefined for operators) its reads pass to the store.
 *
 * @module
 */

import type { Context } from "hono";
import type { Identity } from "../policy/compile.ts";
import { AGENTS_ADMIN_SCOPE, covers } from "../policy/scopes.ts";
import type { ServerEnv } from "../state.ts";

export { AGENTS_ADMIN_SCOPE };

/** Who a request (or a turn, or an automation) acts as. */
export interface Tenant {
  /** The identity: the owner of what it creates. */
  id: string;
  /**
   * The owner its reads are confined to: its own id, or undefined for an operator (every
   * owner's resources).
   */
  sees: string | undefined;
}

/**
 * The tenant of an identity.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tenant } from "./tenants.ts";
 * assert.deepEqual(tenant({ id: "low", token: "t", scopes: ["agents:read"] }), { id: "low", sees: "low" });
 * assert.deepEqual(tenant({ id: "ops", token: "t", scopes: ["agents:admin"] }), { id: "ops", sees: undefined });
 * ```
 */
export function tenant(identity: Identity): Tenant {
  return {
    id: identity.id,
    sees: covers(identity.scopes, AGENTS_ADMIN_SCOPE) ? undefined : identity.id,
  };
}

/** The tenant of a request's identity. */
export function tenantOf(c: Context<ServerEnv>): Tenant {
  const identity = c.get("identity");
  if (!identity) throw new Error("an agents request without an identity");
  return tenant(identity);
}

/**
 * The identity of the policy that owns a resource, or undefined when the policy no longer lists
 * it: a session's turns and an automation's deliveries run under it, whoever started them.
 */
export function ownerIdentity(
  policy: { identities: readonly Identity[] },
  owner: string,
): Identity | undefined {
  return policy.identities.find((i) => i.id === owner);
}

/**
 * The tenant a session's turn, or an automation's delivery, acts as: its owner, seeing only its
 * owner's resources (even when the owner is an operator, a session uses only its own vaults,
 * files, environments and templates).
 */
export function ownerTenant(owner: string): Tenant {
  return { id: owner, sees: owner };
}
