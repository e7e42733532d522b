/**
 * The SDK's half of a signed link to a sandbox's port (`port_link.ts`, which the gateway checks):
 * the signature, made synchronously (`network.getSignedUrl` returns a string) with `node:crypto`.
 *
 * @module
 */

import { createHmac } from "node:crypto";
import { linkMessage } from "./port_link.ts";

/**
 * The value of a link to `port` valid until `expiry` (Unix seconds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { linkValid } from "./port_link.ts";
 * import { signLink } from "./port_link_sign.ts";
 * const expiry = Math.floor(Date.now() / 1000) + 60;
 * const value = signLink("token-0123456789abcdef", "sbx", 8000, expiry);
 * assert.equal(await linkValid(value, "token-0123456789abcdef", "sbx", 8000), true);
 * assert.equal(await linkValid(value, "token-0123456789abcdef", "sbx", 8001), false); // port
 * assert.equal(await linkValid(value, "token-other-0123456789", "sbx", 8000), false); // key
 * const past = signLink("token-0123456789abcdef", "sbx", 8000, expiry - 120);
 * assert.equal(await linkValid(past, "token-0123456789abcdef", "sbx", 8000), false); // expired
 * ```
 */
export function signLink(
  accessToken: string,
  sandboxId: string,
  port: number,
  expiry: number,
): string {
  const signature = createHmac("sha256", accessToken)
    .update(linkMessage(sandboxId, port, expiry))
    .digest("base64url");
  return `${expiry}.${signature}`;
}
