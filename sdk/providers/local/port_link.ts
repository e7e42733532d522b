/**
 * Signed, expiring links to a sandbox's port, for a browser (which cannot send `X-Access-Token`),
 * as Daytona's preview links are. The link carries `sandbar_link=<expiry>.<signature>`: an
 * HMAC-SHA256, keyed by the sandbox's access token, of the sandbox id, the port and the expiry
 * (Unix seconds). The gateway checks it, answers with a redirect to the same address without it
 * and a cookie for that port holding the same value, so the page's own requests are admitted
 * too, until the expiry, which every request checks again.
 *
 * @module
 */

import { createHmac } from "node:crypto";
import { tokensEqual } from "../../../shared/tokens_equal.ts";

/** The query parameter and, with `_<port>`, the cookie that carry a link. */
export const LINK_PARAM = "sandbar_link";

function signature(accessToken: string, sandboxId: string, port: number, expiry: number): string {
  return createHmac("sha256", accessToken).update(`${sandboxId}\n${port}\n${expiry}`)
    .digest("base64url");
}

/**
 * The value of a link to `port` valid until `expiry` (Unix seconds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { linkValid, signLink } from "./port_link.ts";
 * const expiry = Math.floor(Date.now() / 1000) + 60;
 * const value = signLink("token-0123456789abcdef", "sbx", 8000, expiry);
 * assert.equal(linkValid(value, "token-0123456789abcdef", "sbx", 8000), true);
 * assert.equal(linkValid(value, "token-0123456789abcdef", "sbx", 8001), false); // another port
 * const past = signLink("token-0123456789abcdef", "sbx", 8000, expiry - 120);
 * assert.equal(linkValid(past, "token-0123456789abcdef", "sbx", 8000), false); // expired
 * ```
 */
export function signLink(
  accessToken: string,
  sandboxId: string,
  port: number,
  expiry: number,
): string {
  return `${expiry}.${signature(accessToken, sandboxId, port, expiry)}`;
}

/** Whether `value` is a link to `port` of this sandbox that has not expired. */
export function linkValid(
  value: string,
  accessToken: string,
  sandboxId: string,
  port: number,
): boolean {
  const m = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!m) return false;
  const expiry = Number(m[1]);
  if (expiry * 1000 <= Date.now()) return false;
  return tokensEqual(m[2], signature(accessToken, sandboxId, port, expiry));
}
