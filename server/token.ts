/**
 * Tokens the server generates when it is given none. Its own module so that the command line's
 * launcher, which only settles the token and starts the narrowed server, loads nothing else.
 *
 * @module
 */

/**
 * A random token: 32 bytes, base64url.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateToken } from "./token.ts";
 * assert.match(generateToken(), /^[A-Za-z0-9_-]{43}$/);
 * assert.notEqual(generateToken(), generateToken());
 * ```
 */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
