/**
 * The URL guard of the browser group. It decides every navigation, every request the page makes
 * (each redirect hop included), and every connection Chromium opens through the server's proxy.
 *
 * Order of refusals, first wins:
 * 1. `url_invalid` (400): the text is not an absolute URL, or a navigation is not `http:` or
 *    `https:`.
 * 2. `url_denied` rule `scheme:<scheme>`: a page request to anything but http(s), ws(s) or the
 *    in-browser `data:`, `blob:` and `about:`.
 * 3. `url_denied` rule `url_deny:<pattern>`: a `url_deny` pattern matches.
 * 4. `url_denied` rule `url_allow`: `url_allow` is not empty and no pattern matches.
 * 5. `url_denied` rule `self`: the server's own ports on loopback; a page never reaches the API.
 * 6. `url_denied` rule `private:<range>`: the destination address is loopback, link-local,
 *    private, shared, unspecified, multicast or reserved (see `addresses.ts`), and no `url_allow`
 *    pattern with a specific host (not the bare `*`) matches the name asked for (never the
 *    address it resolved to: allowing `127.0.0.1` must not let a rebinding attacker's name in).
 *    Names are judged by every address they resolve to, at the moment the proxy connects, and
 *    the proxy connects to one of exactly those (so DNS rebinding cannot swap the address
 *    between check and use); `localhost` and `*.localhost` are loopback by name.
 *
 * Pattern syntax: see `patterns.ts` and `docs/server/browser.md`.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { addressRange, parseIp } from "./addresses.ts";
import {
  canonicalHost,
  effectivePort,
  matchHostPort,
  matchUrl,
  parseUrlPatterns,
  type UrlPattern,
} from "./patterns.ts";

export { addressRange, inNetwork, parseIp } from "./addresses.ts";
export { canonicalHost, matchHost, parseUrlPattern, parseUrlPatterns } from "./patterns.ts";

/** A refusal of the URL guard. */
export interface UrlRefusal {
  /** `url_invalid` or `url_denied`. */
  code: "url_invalid" | "url_denied";
  /** Which rule refused: `scheme:…`, `url_deny:<pattern>`, `url_allow`, `self`, `private:<range>`. */
  rule: string;
  /** A sentence for the caller. */
  message: string;
  /** What was refused (a URL, or `host:port`). */
  url: string;
}

/** Where the server itself listens; pages never reach these ports on loopback. */
export interface SelfAddress {
  /** The listening host. */
  host: string;
  /** The listening port. */
  port: number;
}

/** Schemes that stay inside Chromium and are no network request. */
const IN_BROWSER_SCHEMES: ReadonlySet<string> = new Set(["data:", "blob:", "about:"]);
const NETWORK_SCHEMES: ReadonlySet<string> = new Set(["http:", "https:", "ws:", "wss:"]);
const MAX_URL_LENGTH = 16384;

/**
 * The compiled URL rules of one policy, built from its plain allow and deny lists (the guard
 * knows nothing of the policy's shape).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { UrlGuard } from "./index.ts";
 * const guard = new UrlGuard(["http://127.0.0.1:*"], []);
 * assert.equal(guard.checkUrl("http://127.0.0.1:8080/", true), null); // allowed
 * assert.equal(guard.checkUrl("http://169.254.169.254/", true)?.rule, "url_allow");
 * ```
 */
export class UrlGuard {
  readonly #allow: readonly UrlPattern[];
  readonly #deny: readonly UrlPattern[];
  readonly #self: readonly SelfAddress[];

  /** Compile the rules; throws on a bad pattern. */
  constructor(
    allow: readonly string[],
    deny: readonly string[],
    self: readonly SelfAddress[] = [],
  ) {
    this.#allow = parseUrlPatterns(allow, "url_allow");
    this.#deny = parseUrlPatterns(deny, "url_deny");
    this.#self = self;
  }

  /**
   * Decide a URL: a navigation (`navigation` true: http or https only) or a request of the page.
   * Returns `null` when allowed. An address literal is judged here; a name is judged again by
   * the proxy once resolved.
   */
  checkUrl(raw: string, navigation: boolean): UrlRefusal | null {
    let url: URL;
    try {
      if (raw.length > MAX_URL_LENGTH) throw new Error("too long");
      url = new URL(raw);
    } catch {
      return {
        code: "url_invalid",
        rule: "url",
        message: `Not an absolute URL: ${raw.slice(0, 200)}`,
        url: raw.slice(0, 2000),
      };
    }
    const shown = url.href.slice(0, 2000);
    if (navigation && url.protocol !== "http:" && url.protocol !== "https:") {
      return {
        code: "url_invalid",
        rule: `scheme:${url.protocol.slice(0, -1)}`,
        message: `Only http: and https: URLs can be opened, not ${url.protocol}`,
        url: shown,
      };
    }
    if (IN_BROWSER_SCHEMES.has(url.protocol)) return null;
    if (!NETWORK_SCHEMES.has(url.protocol)) {
      return this.#denied(`scheme:${url.protocol.slice(0, -1)}`, shown, "its scheme");
    }
    const deny = this.#deny.find((p) => matchUrl(p, url));
    if (deny) return this.#denied(`url_deny:${deny.source}`, shown, `url_deny ${deny.source}`);
    if (this.#allow.length > 0 && !this.#allow.some((p) => matchUrl(p, url))) {
      return this.#denied("url_allow", shown, "no url_allow pattern matches it");
    }
    const port = effectivePort(url);
    const literal = parseIp(url.hostname.replace(/^\[|\]$/g, ""));
    const range = literal ? addressRange(literal) : loopbackName(url.hostname);
    if (range && this.#isSelf(url.hostname.replace(/^\[|\]$/g, ""), port, range)) {
      return this.#denied("self", shown, "it is this server's own port");
    }
    if (range && !this.#allow.some((p) => p.host.kind !== "any" && matchUrl(p, url))) {
      return this.#denied(`private:${range}`, shown, `it is a ${range} address`);
    }
    return null;
  }

  /**
   * Decide a connection the proxy is asked for: `hostname` as Chromium named it, `port`, and
   * `addresses`, every address the name resolved to (the connection goes to one of exactly
   * these). Any refused address refuses the connection.
   */
  checkConnection(hostname: string, port: number, addresses: readonly string[]): UrlRefusal | null {
    const host = canonicalHost(hostname);
    if (!host) {
      return { code: "url_invalid", rule: "url", message: `Bad host ${hostname}`, url: hostname };
    }
    const shown = `${host}:${port}`;
    const deny = this.#deny.find((p) => p.path === null && matchHostPort(p, host, port));
    if (deny) return this.#denied(`url_deny:${deny.source}`, shown, `url_deny ${deny.source}`);
    if (this.#allow.length > 0 && !this.#allow.some((p) => matchHostPort(p, host, port))) {
      return this.#denied("url_allow", shown, "no url_allow pattern matches it");
    }
    const named = loopbackName(host);
    for (const address of addresses) {
      const range = named ?? addressRange(address);
      if (!range) continue;
      if (this.#isSelf(address, port, range)) {
        return this.#denied("self", shown, "it is this server's own port");
      }
      // Judged by the name asked for, not the address: allowing 127.0.0.1 must not let any
      // name that resolves there (a rebinding attacker's) be same-origin with a local service.
      const allowed = this.#allow.some((p) =>
        p.host.kind !== "any" && matchHostPort(p, host, port)
      );
      if (!allowed) {
        return this.#denied(`private:${range}`, shown, `it resolves to ${range} ${address}`);
      }
    }
    return null;
  }

  /**
   * Whether a non-public address on `port` is this server. A server listening on every
   * interface (`0.0.0.0`, `::`) answers on each of the machine's private addresses too.
   */
  #isSelf(address: string, port: number, range: string): boolean {
    return this.#self.some((s) =>
      s.port === port &&
      (range === "loopback" || range === "unspecified" || s.host === address ||
        addressRange(s.host) === "unspecified")
    );
  }

  #denied(rule: string, url: string, why: string): UrlRefusal {
    return { code: "url_denied", rule, message: `URL ${url} is refused: ${why}`, url };
  }
}

/** `localhost` and its subdomains are loopback whatever DNS says (as in Chromium). */
export function loopbackName(hostname: string): "loopback" | null {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost") ? "loopback" : null;
}

/**
 * The {@linkcode ApiError} for a refusal.
 */
export function refusalError(refusal: UrlRefusal, param?: string): ApiError {
  return new ApiError(refusal.code, refusal.message, { rule: refusal.rule, param });
}
