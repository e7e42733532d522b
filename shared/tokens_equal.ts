/**
 * The one comparison of a presented secret token with a known one, in constant time: the
 * server's authentication and its environment guard (which refuses a variable whose value is an
 * identity's token) and the SDK's local provider (its gateway and channel secrets) all use it.
 * It lives in `shared/` so the SDK need not import the server for it.
 *
 * @module
 */

/**
 * Compare a presented token with a known one in time that depends only on the known token's
 * length: every character is compared, with no early exit, and a length mismatch is folded into
 * the same result. (Hashing first costs a native call per request and buys nothing here.)
 * `from` compares `presented` from that index on, so a header value such as `Bearer <token>`
 * is compared in place rather than through a slice, whose characters cost more to read.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokensEqual } from "./tokens_equal.ts";
 * assert.equal(tokensEqual("secret-token", "secret-token"), true);
 * assert.equal(tokensEqual("Bearer secret-token", "secret-token", 7), true); // from offset 7
 * assert.equal(tokensEqual("secret-tokem", "secret-token"), false);
 * ```
 */
export function tokensEqual(presented: string, known: string, from = 0): boolean {
  let diff = (presented.length - from) ^ known.length;
  for (let i = 0; i < known.length; i++) {
    diff |= (presented.charCodeAt(from + i) | 0) ^ known.charCodeAt(i);
  }
  return diff === 0;
}
