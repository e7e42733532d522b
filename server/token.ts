/**
 * Tokens the server generates when it is given none. Its own module so that the command line's
 * launcher, which only settles the token and starts the narrowed server, loads nothing else.
 *
 * @module
 */

/**
 * The shortest token the server takes, for `SVC_SERVER_TOKEN` and every identity alike: 16
 * characters keep a guessed token out of reach of any request rate the server serves.
 */
export const MIN_TOKEN_LENGTH = 16;

/**
 * Why `token` is too short to use, or `undefined` when it is long enough. `source` names where it
 * came from, for the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenTooShort } from "./token.ts";
 * assert.equal(
 *   tokenTooShort("short", "SVC_SERVER_TOKEN"),
 *   "SVC_SERVER_TOKEN is 5 characters; a token needs at least 16",
 * );
 * assert.equal(tokenTooShort("sixteen-chars-or-more", "SVC_SERVER_TOKEN"), undefined);
 * ```
 */
export function tokenTooShort(token: string, source: string): string | undefined {
  if (token.length >= MIN_TOKEN_LENGTH) return undefined;
  return `${source} is ${token.length} characters; a token needs at least ${MIN_TOKEN_LENGTH}`;
}

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
