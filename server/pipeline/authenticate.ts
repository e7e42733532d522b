/**
 * Step 2 of the pipeline: who is calling. A token comes as `Authorization: Bearer <token>` or as
 * `X-Access-Token`; two different values among them (repeated headers included) are refused as
 * `ambiguous_credentials` rather than guessed at. The token is compared with every identity's
 * in constant time, without stopping at a match, so timing says nothing about which identity,
 * or how much of a token, matched.
 *
 * @module
 */

import { tokensEqual } from "../../shared/tokens_equal.ts";
import { ApiError } from "../errors.ts";
import type { EndpointState, Identity } from "../policy/compile.ts";

/** Where the token of the common case, one `Authorization: Bearer <token>`, starts, or -1. */
function singleBearerAt(auth: string | null, access: string | null): number {
  if (access !== null || auth === null || auth.length <= 7 || !auth.startsWith("Bearer ")) {
    return -1;
  }
  // A comma means repeated headers; a space, anything but a bare token.
  if (auth.indexOf(",", 7) !== -1 || auth.indexOf(" ", 7) !== -1) return -1;
  return 7;
}

function presented(auth: string | null, access: string | null): string[] {
  const values = new Set<string>();
  if (auth !== null) {
    // Repeated headers arrive joined by ", ".
    for (const part of auth.split(",")) {
      const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(part);
      if (!m) throw new ApiError("unauthorized", "Authorization must be 'Bearer <token>'");
      values.add(m[1]);
    }
  }
  if (access !== null) {
    for (const part of access.split(",")) {
      const v = part.trim();
      if (v) values.add(v);
    }
  }
  return [...values];
}

/** The subprotocol prefix that carries a token on the PTY port: `sandbar.bearer.<token>`. */
export const BEARER_SUBPROTOCOL_PREFIX = "sandbar.bearer.";

/**
 * Tokens a WebSocket client can send without headers (browsers cannot set them on a
 * WebSocket): `Sec-WebSocket-Protocol` entries `sandbar.bearer.<token>` and `access_token`
 * query parameters. Read on the PTY port only; see `docs/server/terminal.md`.
 */
function presentedWithoutHeaders(req: Request): string[] {
  const values: string[] = [];
  const protocols = req.headers.get("sec-websocket-protocol");
  if (protocols !== null) {
    for (const part of protocols.split(",")) {
      const p = part.trim();
      if (p.startsWith(BEARER_SUBPROTOCOL_PREFIX)) {
        values.push(p.slice(BEARER_SUBPROTOCOL_PREFIX.length));
      }
    }
  }
  const query = req.url.indexOf("?");
  if (query !== -1) {
    for (const v of new URLSearchParams(req.url.slice(query + 1)).getAll("access_token")) {
      values.push(v);
    }
  }
  return values.filter((v) => v !== "");
}

/**
 * The identity holding a token, by constant-time comparison, or undefined.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { identify } from "./authenticate.ts";
 * const identities = [{ id: "ci", token: "secret-token-value", scopes: ["*"] }];
 * assert.equal(identify(identities, "secret-token-value")?.id, "ci");
 * assert.equal(identify(identities, "secret-token-valuf"), undefined);
 * ```
 */
export function identify(
  identities: readonly Identity[],
  token: string,
  from = 0,
): Identity | undefined {
  let found: Identity | undefined;
  for (const identity of identities) {
    // Every identity is compared; no early exit.
    if (tokensEqual(token, identity.token, from) && !found) found = identity;
  }
  return found;
}

/**
 * The authentication step: the identity holding the request's token, or undefined for a public
 * endpoint (`health`), which skips it.
 */
export function authenticate(
  req: Request,
  endpoint: EndpointState,
  identities: readonly Identity[],
): Identity | undefined {
  if (endpoint.spec.public) return undefined;
  const auth = req.headers.get("authorization");
  const access = req.headers.get("x-access-token");
  const pty = endpoint.spec.port === "pty";
  // The common case, one Bearer token, without a set, a split or a regular expression.
  const at = pty ? -1 : singleBearerAt(auth, access);
  if (at !== -1) {
    const identity = identify(identities, auth!, at);
    if (!identity) throw new ApiError("unauthorized", "Invalid token");
    return identity;
  }
  let tokens = presented(auth, access);
  // PTY port only (pty_connect): also a subprotocol entry or an access_token query parameter,
  // since browsers cannot set headers on a WebSocket. Port 9000 never looks at either.
  if (pty) tokens = [...new Set([...tokens, ...presentedWithoutHeaders(req)])];
  if (tokens.length === 0) {
    throw new ApiError("unauthorized", "Missing token: send Authorization: Bearer <token>");
  }
  if (tokens.length > 1) {
    throw new ApiError(
      "ambiguous_credentials",
      "Two different credential values were sent; send one token",
    );
  }
  const identity = identify(identities, tokens[0]);
  if (!identity) throw new ApiError("unauthorized", "Invalid token");
  return identity;
}
