/**
 * URL patterns of `url_allow` and `url_deny`: `scheme://host[:port][path]`.
 *
 * - scheme: `http`, `https`, `ws`, `wss`, or `*` for any of them.
 * - host: a name, `*.example.com` (the name and every subdomain), an IPv4 address, an IPv6
 *   address in brackets, or `*` for any host. Normalized by the WHATWG URL parser, so the
 *   comparison is against what Chromium will use (lower case, punycode, `0x7f.1` is `127.0.0.1`).
 * - port: a number, or `*`. Omitted: the scheme's default port (80 for http/ws, 443 for
 *   https/wss).
 * - path: a glob over path plus query where `*` matches any characters, `/` included. Omitted:
 *   any path.
 *
 * @module
 */

/** The schemes a pattern may name. */
const SCHEMES = ["http", "https", "ws", "wss"] as const;

const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, ws: 80, https: 443, wss: 443 };

/** The host part of a pattern. */
export type HostPattern =
  | { kind: "any" }
  | { kind: "exact"; host: string }
  | { kind: "suffix"; suffix: string };

/** A parsed URL pattern. */
export interface UrlPattern {
  /** The pattern as written in the policy. */
  source: string;
  /** Schemes it covers. */
  schemes: readonly string[];
  /** Host rule. */
  host: HostPattern;
  /** A port, `*`, or `default` (the scheme's default port). */
  port: number | "*" | "default";
  /** Glob over path plus query, or `null` for any. */
  path: RegExp | null;
}

const SHAPE = /^(\*|[a-z][a-z0-9+.-]*):\/\/(\[[^\]]*\]|[^/:?#]*)(?::([^/?#]*))?([/?].*)?$/i;

/**
 * The WHATWG hostname of `host` (IPv6 with or without brackets), or `null` when the URL parser
 * refuses it.
 */
export function canonicalHost(host: string): string | null {
  try {
    const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
    return new URL(`http://${bracketed}/`).hostname;
  } catch {
    return null;
  }
}

function globToRegExp(glob: string): RegExp {
  const body = glob.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  return new RegExp(`^${body}$`);
}

/**
 * Parse a pattern; throws an `Error` saying what is wrong.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseUrlPattern } from "./patterns.ts";
 * assert.equal(parseUrlPattern("http://127.0.0.1:*").port, "*");
 * const { host } = parseUrlPattern("https://*.example.com/*");
 * assert.deepEqual(host, { kind: "suffix", suffix: "example.com" });
 * ```
 */
export function parseUrlPattern(source: string): UrlPattern {
  const m = SHAPE.exec(source.trim());
  if (!m) throw new Error(`"${source}" is not scheme://host[:port][/path]`);
  const [, rawScheme, rawHost, rawPort, rawPath] = m;
  const scheme = rawScheme.toLowerCase();
  if (scheme !== "*" && !(SCHEMES as readonly string[]).includes(scheme)) {
    throw new Error(`"${source}": scheme must be http, https, ws, wss or *`);
  }
  let host: HostPattern;
  if (rawHost === "*") {
    host = { kind: "any" };
  } else if (rawHost.startsWith("*.")) {
    const suffix = canonicalHost(rawHost.slice(2));
    if (!suffix || suffix.startsWith("[") || rawHost.slice(2).includes("*")) {
      throw new Error(`"${source}": bad host "${rawHost}"`);
    }
    host = { kind: "suffix", suffix };
  } else {
    const exact = rawHost.includes("*") ? null : canonicalHost(rawHost);
    if (!exact) throw new Error(`"${source}": bad host "${rawHost}"`);
    host = { kind: "exact", host: exact };
  }
  let port: UrlPattern["port"] = "default";
  if (rawPort !== undefined) {
    if (rawPort === "*") port = "*";
    else if (/^\d{1,5}$/.test(rawPort) && Number(rawPort) <= 65535) port = Number(rawPort);
    else throw new Error(`"${source}": port must be a number or *`);
  }
  let path: RegExp | null = null;
  if (rawPath !== undefined && rawPath !== "/*") {
    // Normalize like the URL parser does (percent-encoding), keeping `*` as the wildcard.
    const u = new URL(rawPath.startsWith("/") ? rawPath : `/${rawPath}`, "http://x");
    path = globToRegExp(u.pathname + u.search);
  }
  return { source, schemes: scheme === "*" ? SCHEMES : [scheme], host, port, path };
}

/** The port a URL connects to. */
export function effectivePort(url: URL): number {
  return url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol.slice(0, -1)] ?? 0;
}

/** Whether a WHATWG hostname matches a host pattern. */
export function matchHost(p: HostPattern, hostname: string): boolean {
  const host = hostname.toLowerCase();
  switch (p.kind) {
    case "any":
      return true;
    case "exact":
      return host === p.host;
    case "suffix":
      // An address literal is never a subdomain.
      if (host.startsWith("[") || /^[\d.]+$/.test(host)) return false;
      return host === p.suffix || host.endsWith(`.${p.suffix}`);
  }
}

function matchPort(p: UrlPattern, port: number, schemes: readonly string[]): boolean {
  if (p.port === "*") return true;
  if (p.port === "default") return schemes.some((s) => DEFAULT_PORTS[s] === port);
  return p.port === port;
}

/**
 * Whether a URL matches a pattern.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchUrl, parseUrlPattern } from "./patterns.ts";
 * const pattern = parseUrlPattern("https://*.example.com/api/*");
 * assert.equal(matchUrl(pattern, new URL("https://a.example.com/api/x")), true);
 * assert.equal(matchUrl(pattern, new URL("https://example.org/api/x")), false);
 * ```
 */
export function matchUrl(p: UrlPattern, url: URL): boolean {
  const scheme = url.protocol.slice(0, -1);
  if (!p.schemes.includes(scheme)) return false;
  if (!matchHost(p.host, url.hostname)) return false;
  if (!matchPort(p, effectivePort(url), [scheme])) return false;
  return p.path === null || p.path.test(url.pathname + url.search);
}

/**
 * Whether a connection to `hostname:port` could serve a URL the pattern matches. The browser's
 * proxy sees only host and port, so the scheme counts only through its default port, and the
 * path not at all.
 */
export function matchHostPort(p: UrlPattern, hostname: string, port: number): boolean {
  return matchHost(p.host, hostname) && matchPort(p, port, p.schemes);
}

/** Check every pattern of a list; throws naming the list and the bad pattern. */
export function parseUrlPatterns(list: readonly string[], key: string): UrlPattern[] {
  return list.map((p) => {
    try {
      return parseUrlPattern(p);
    } catch (e) {
      throw new Error(`policy: ${key}: ${(e as Error).message}`);
    }
  });
}
