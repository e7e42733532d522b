/**
 * The random names a provider gives a new sandbox, the same for every provider so that an id
 * or a token looks alike whichever made it: the id (20 lower-case letters and digits, fit for
 * a host name label and a container name) and its tokens (32 random bytes, base64url).
 *
 * @module
 */

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/**
 * A new sandbox id.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { newSandboxId } from "./ids.ts";
 * assert.match(newSandboxId(), /^[a-z0-9]{20}$/);
 * ```
 */
export function newSandboxId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(20));
  return Array.from(bytes, (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join("");
}

/**
 * A new token (server, access or gateway): 32 random bytes, base64url without padding.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { newSandboxToken } from "./ids.ts";
 * assert.match(newSandboxToken(), /^[A-Za-z0-9_-]{43}$/);
 * ```
 */
export function newSandboxToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
