/**
 * Signed, expiring links to a sandbox's port, for a browser (which cannot send `X-Access-Token`),
 * as Daytona's preview links are. The link carries `sandbar_link=<expiry>.<signature>`: an
 * HMAC-SHA256, keyed by the sandbox's access token, of the sandbox id, the port and the expiry
 * (Unix seconds). The gateway checks it, answers with a redirect to the same address without it
 * and a cookie for that port holding the same value, so the page's own requests are admitted
 * too, until the expiry, which every request checks again.
 *
 * The gateway's check is here, on WebCrypto; the SDK's signing is in `port_link_sign.ts`, whose
 * synchronous HMAC (`node:crypto`) would cost every sandbox's supervisor about 2.5 MiB to load.
 *
 * @module
 */

/** The query parameter and, with `_<port>`, the cookie that carry a link. */
export const LINK_PARAM = "sandbar_link";

/** What a link's signature covers. */
export function linkMessage(sandboxId: string, port: number, expiry: number): string {
  return `${sandboxId}\n${port}\n${expiry}`;
}

const encoder = new TextEncoder();

/** Whether `value` is a link to `port` of this sandbox that has not expired. */
export async function linkValid(
  value: string,
  accessToken: string,
  sandboxId: string,
  port: number,
): Promise<boolean> {
  const m = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!m) return false;
  const expiry = Number(m[1]);
  if (expiry * 1000 <= Date.now()) return false;
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(accessToken),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  let signature: Uint8Array<ArrayBuffer>;
  try {
    signature = Uint8Array.fromBase64(m[2], { alphabet: "base64url" });
  } catch {
    return false;
  }
  // WebCrypto's verify compares in constant time.
  return await crypto.subtle.verify(
    "HMAC",
    key,
    signature,
    encoder.encode(linkMessage(sandboxId, port, expiry)),
  );
}
