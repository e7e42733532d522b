/**
 * Ids in the OpenAI style: a type prefix and 24 random bytes in hex (`agent_…`, `vault_…`,
 * `file-…`, `resp_…`), and timestamps in Unix seconds.
 *
 * @module
 */

/** The prefix of each kind of object. */
export const ID_PREFIX = {
  agent: "agent_",
  vault: "vault_",
  credential: "cred_",
  file: "file-",
  response: "resp_",
  environment: "env_",
  template: "envtpl_",
  session: "sess_",
  turn: "turn_",
  subagent: "subagent_",
  item: "item_",
  message: "msg_",
  event: "evt_",
  artifact: "artifact_",
  call: "call_",
  automation: "automation_",
  invocation: "autoinv_",
} as const;

/** A kind of stored object. */
export type ObjectKind = keyof typeof ID_PREFIX;

/**
 * A new id for a kind of object.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newId } from "./ids.ts";
 * assert.match(newId("agent"), /^agent_[0-9a-f]{48}$/);
 * ```
 */
export function newId(kind: ObjectKind): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return ID_PREFIX[kind] + hex;
}

/** Now, in Unix seconds. */
export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
