/**
 * Upstream conversations as tenants' resources. A `conversation` named on `POST /v1/responses`
 * (or on `input_tokens`) is the upstream's object: the server does not make or keep it, and the
 * upstream knows only the server's key, so without a check here any identity that learned
 * another's conversation id could have the model continue it, and read it back through the
 * model. So the first identity to use a conversation id through this server owns it from then
 * on (a row of kind `conversation` under the id `conversation/<id>`, its owner that identity),
 * and another identity's use is refused with the 404 of any other's resource, before anything
 * reaches the upstream. An operator (`agents:admin`) may use any, as it may continue any
 * response, and its first use claims it as its own. A claim made by a request the upstream then
 * refused is dropped again, so naming an id that does not exist upstream claims nothing (and the
 * upstream's 404 for it is answered as the same missing resource, `resources/responses.ts`).
 *
 * @module
 */

import { notFound } from "../errors.ts";
import { unixNow } from "../ids.ts";
import type { AgentStore } from "../store.ts";
import type { Tenant } from "../tenants.ts";

const KIND = "conversation";

/**
 * The conversation id a request names (`"conv_…"` or `{ "id": "conv_…" }`), or undefined. Any
 * other shape is the upstream's to refuse, and names no conversation it could continue.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { conversationId } from "./conversations.ts";
 * assert.equal(conversationId("conv_1"), "conv_1");
 * assert.equal(conversationId({ id: "conv_2" }), "conv_2");
 * assert.equal(conversationId(undefined), undefined);
 * ```
 */
export function conversationId(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value !== null && typeof value === "object" && "id" in value) {
    const id = (value as { id: unknown }).id;
    if (typeof id === "string") return id;
  }
  return undefined;
}

/**
 * Check that `tenant` may use conversation `id`, claiming it when nobody has: true when this
 * call claimed it (the caller drops the claim with {@linkcode dropClaim} if the upstream
 * refuses the request). Throws the 404 of a missing resource (param `param`) when another
 * identity owns it.
 */
export function useConversation(
  store: AgentStore,
  tenant: Tenant,
  id: string,
  param = "conversation",
): boolean {
  return store.transaction(() => {
    const row = store.get(KIND, `${KIND}/${id}`);
    if (row !== undefined) {
      if (tenant.sees !== undefined && row.owner !== tenant.sees) {
        throw notFound("conversation", id, param);
      }
      return false;
    }
    store.insert(KIND, `${KIND}/${id}`, "", unixNow(), { id, object: KIND }, null, tenant.id);
    return true;
  });
}

/** Drop a claim {@linkcode useConversation} made for a request the upstream refused. */
export function dropClaim(store: AgentStore, id: string): void {
  store.delete(`${KIND}/${id}`);
}
