/**
 * Step 2 of the pipeline: who is calling. A token comes as `Authorization: Bearer <token>` or as
 * `X-Access-Token`; two different values among them (repeated headers included) are refused as
 * `ambiguous_credentials` rather than guessed at. The token is hashed and compared with every
 * identity's hash in constant time, without stopping at a match, so timing says nothing about
 * which identity, or how much of a token, matched.
 *
 * @module
 */

import { timingSafeEqual } from "node:crypto";
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../errors.ts";
import { hashToken, type Identity } from "../../policy/compile.ts";
import type { ServerEnv } from "../../state.ts";

function presented(headers: Headers): string[] {
  const values = new Set<string>();
  const auth = headers.get("authorization");
  if (auth !== null) {
    // Repeated headers arrive joined by ", ".
    for (const part of auth.split(",")) {
      const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(part);
      if (!m) throw new ApiError("unauthorized", "Authorization must be 'Bearer <token>'");
      values.add(m[1]);
    }
  }
  const access = headers.get("x-access-token");
  if (access !== null) {
    for (const part of access.split(",")) {
      const v = part.trim();
      if (v) values.add(v);
    }
  }
  return [...values];
}

/**
 * The identity holding a token, by constant-time comparison, or undefined.
 *
 * @example
 * ```ts ignore
 * const who = identify(policy.identities, "secret-token-value");
 * ```
 */
export function identify(identities: readonly Identity[], token: string): Identity | undefined {
  const hash = hashToken(token);
  let found: Identity | undefined;
  for (const identity of identities) {
    // Every identity is compared; no early exit.
    if (timingSafeEqual(hash, identity.tokenHash) && !found) found = identity;
  }
  return found;
}

/**
 * The authentication middleware; `health` skips it.
 *
 * @example
 * ```ts ignore
 * app.on("GET", "/x", authenticate(), handler);
 * ```
 */
export function authenticate() {
  return createMiddleware<ServerEnv>(async (c, next) => {
    if (c.var.endpoint.spec.public) return await next();
    const tokens = presented(c.req.raw.headers);
    if (tokens.length === 0) {
      throw new ApiError("unauthorized", "Missing token: send Authorization: Bearer <token>");
    }
    if (tokens.length > 1) {
      throw new ApiError(
        "ambiguous_credentials",
        "Two different credential values were sent; send one token",
      );
    }
    const identity = identify(c.var.state.policy.identities, tokens[0]);
    if (!identity) throw new ApiError("unauthorized", "Invalid token");
    c.set("identity", identity);
    await next();
  });
}
