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
  let hex = ID_PREFIX[kind];
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
