/**
 * Network rules: which connections a sandbox's (or an identity's) processes may make through
 * the egress proxy. Pure decisions, no I/O; the proxy resolves names and asks here.
 *
 * A rule is one string, `host[:ports]`:
 *
 * - host: `*` (any), a name (`example.com`), `*.example.com` (the name and every subdomain),
 *   an IPv4 address, an IPv6 address (in brackets when a port follows), or a network in CIDR
 *   form (`10.0.0.0/8`, `[fd00::]/8:22`). Names are compared as the WHATWG URL parser
 *   normalizes them (lower case, punycode), the same way the browser's URL guard does.
 * - ports: a number, a range `8000-8999`, or `*`; left out, every port.
 *
 * The decision, first that applies:
 * 1. `network:off`: the network is off.
 * 2. `deny:<rule>`: a deny rule matches the name asked for, or (an address or network rule)
 *    any address it resolved to. Deny wins.
 * 3. `allow`: the allow list is not empty and no allow rule matches the name (or, a network
 *    rule, every address it resolved to).
 * 4. `private:<range>`: an address is loopback, private, link-local (the cloud metadata
 *    address 169.254.169.254 among them), shared, unspecified, multicast or reserved, and no
 *    allow rule *names* it: a name rule other than `*` matching the name asked for, or, when an
 *    address literal was asked for, an address or network rule (not `/0`) holding it. Never
 *    judged by what a name resolved to: allowing `127.0.0.2` must not let a name that a
 *    rebinding attacker points there in. `localhost` and `*.localhost` are loopback by name.
 * 5. Allowed, by `allow:<rule>`, or `public` when the allow list is empty.
 *
 * @module
 */

import {
  addressRange,
  canonicalHost,
  inNetwork,
  loopbackName,
  matchHost,
  parseIp,
} from "../guards/urls/index.ts";

/** The `network` settings as written (policy file, `Sandbox.create({ network })`). */
export interface NetworkConfig {
  /** Rules a connection must match one of (empty or left out: every public host). */
  allow?: string[];
  /** Rules no connection may match; deny wins over allow. */
  deny?: string[];
  /** Names the proxy resolves to these addresses instead of asking DNS. */
  hosts?: Record<string, string | string[]>;
  /**
   * Credentials that never enter the sandbox (local sandboxes): inside, the variable `env` holds
   * only `placeholder`; the proxy puts `value` in its place in the request headers it sends to
   * `host` (a rule: `api.example.com`, `*.example.com:443`) over TLS, and nowhere else.
   */
  secrets?: SecretConfig[];
  /** PEM certificates the proxy trusts, besides the system's, when it checks a host it intercepts. */
  ca?: string[];
}

/** One credential of {@linkcode NetworkConfig.secrets}. */
export interface SecretConfig {
  /** The host rule it is sent to (`host[:ports]`, names only). */
  host: string;
  /** The environment variable inside that holds the placeholder. */
  env: string;
  /** The real secret (never inside the sandbox). */
  value: string;
  /** The placeholder (made by the provider when left out). */
  placeholder?: string;
}

/** A compiled credential: where it goes, what stands for it, what it is. */
export interface SecretRule {
  /** The host rule. */
  rule: NetworkRule;
  /** The placeholder the sandbox sees. */
  placeholder: string;
  /** The real value. */
  value: string;
}

/** The keys a {@linkcode NetworkConfig} may have. */
export const NETWORK_CONFIG_KEYS: readonly string[] = ["allow", "deny", "hosts", "secrets", "ca"];

/** The keys of one {@linkcode SecretConfig}. */
export const SECRET_CONFIG_KEYS: readonly string[] = ["host", "env", "value", "placeholder"];

/** The host part of a rule: any, a name, a name and its subdomains, or an address network. */
export type HostRule =
  | { kind: "any" }
  | { kind: "exact"; host: string }
  | { kind: "suffix"; suffix: string }
  | { kind: "network"; prefix: Uint8Array; bits: number };

/** One parsed rule. */
export interface NetworkRule {
  /** The rule as written. */
  source: string;
  /** Its host part. */
  host: HostRule;
  /** The ports it covers, inclusive, or null for every port. */
  ports: readonly [number, number] | null;
}

/** What {@linkcode NetworkRules.decide} says about one connection. */
export interface NetworkDecision {
  /** Whether the connection may be made. */
  allowed: boolean;
  /** The rule that decided: `network:off`, `deny:<rule>`, `allow`, `private:<range>`, `allow:<rule>`, `public`, `invalid`. */
  rule: string;
  /** A sentence for the program that asked (and the audit log). */
  reason: string;
}

function parsePort(text: string, source: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535 || Number(text) < 1) {
    throw new Error(`"${source}": port "${text}" must be 1 to 65535`);
  }
  return Number(text);
}

function parsePorts(text: string | undefined, source: string): NetworkRule["ports"] {
  if (text === undefined || text === "*") return null;
  const dash = text.indexOf("-");
  if (dash < 0) {
    const p = parsePort(text, source);
    return [p, p];
  }
  const lo = parsePort(text.slice(0, dash), source);
  const hi = parsePort(text.slice(dash + 1), source);
  if (hi < lo) throw new Error(`"${source}": the port range ${text} runs backwards`);
  return [lo, hi];
}

/**
 * Parse one rule; throws an `Error` saying what is wrong with it.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseNetworkRule } from "./rules.ts";
 * assert.deepEqual(parseNetworkRule("*.example.com:443").host, {
 *   kind: "suffix",
 *   suffix: "example.com",
 * });
 * assert.deepEqual(parseNetworkRule("10.0.0.0/8:8000-8999").ports, [8000, 8999]);
 * assert.throws(() => parseNetworkRule("example.com:http"), /port "http"/);
 * ```
 */
export function parseNetworkRule(source: string): NetworkRule {
  const text = source.trim();
  if (text === "") throw new Error("a rule is empty");
  let hostText: string;
  let bitsText: string | undefined;
  let portText: string | undefined;
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) throw new Error(`"${source}": no closing ] after the IPv6 address`);
    hostText = text.slice(1, close);
    const rest = /^(?:\/(\d{1,3}))?(?::([^:]+))?$/.exec(text.slice(close + 1));
    if (!rest) throw new Error(`"${source}" is not [address][/bits][:ports]`);
    [, bitsText, portText] = rest;
  } else if (text.split(":").length > 2) {
    // An IPv6 address without brackets: no port can follow.
    const slash = text.indexOf("/");
    hostText = slash < 0 ? text : text.slice(0, slash);
    bitsText = slash < 0 ? undefined : text.slice(slash + 1);
  } else {
    const colon = text.indexOf(":");
    const hostPart = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? undefined : text.slice(colon + 1);
    const slash = hostPart.indexOf("/");
    hostText = slash < 0 ? hostPart : hostPart.slice(0, slash);
    bitsText = slash < 0 ? undefined : hostPart.slice(slash + 1);
  }
  const ports = parsePorts(portText, source);
  const address = parseIp(hostText);
  if (address) {
    const max = address.length * 8;
    const bits = bitsText === undefined ? max : Number(bitsText);
    if (!/^\d{1,3}$/.test(bitsText ?? "0") || bits > max) {
      throw new Error(`"${source}": a network's prefix length must be 0 to ${max}`);
    }
    return { source, host: { kind: "network", prefix: address, bits }, ports };
  }
  if (bitsText !== undefined) throw new Error(`"${source}": only an address takes /bits`);
  if (hostText === "*") return { source, host: { kind: "any" }, ports };
  const wildcard = hostText.startsWith("*.");
  const name = wildcard ? hostText.slice(2) : hostText;
  const canonical = name.includes("*") ? null : canonicalHost(name);
  if (!canonical || canonical.startsWith("[")) {
    throw new Error(`"${source}": "${hostText}" is not a host name, address or network`);
  }
  return {
    source,
    host: wildcard ? { kind: "suffix", suffix: canonical } : { kind: "exact", host: canonical },
    ports,
  };
}

function portMatches(rule: NetworkRule, port: number): boolean {
  return rule.ports === null || (port >= rule.ports[0] && port <= rule.ports[1]);
}

/** Whether the rule matches the name (or address literal) asked for. */
function matchesName(rule: NetworkRule, host: string, literal: Uint8Array | null): boolean {
  if (rule.host.kind === "network") {
    return literal !== null && inNetwork(literal, rule.host.prefix, rule.host.bits);
  }
  if (rule.host.kind === "any") return true;
  if (literal) return rule.host.kind === "exact" && rule.host.host === host;
  return matchHost(rule.host, host);
}

function matchesAddress(rule: NetworkRule, address: string): boolean {
  if (rule.host.kind !== "network") return false;
  const bytes = parseIp(address);
  return bytes !== null && inNetwork(bytes, rule.host.prefix, rule.host.bits);
}

/** Whether the rule names a host specifically (so a non-public address may be reached). */
function names(rule: NetworkRule, host: string, literal: Uint8Array | null): boolean {
  if (rule.host.kind === "any") return false;
  if (rule.host.kind === "network") return rule.host.bits > 0 && matchesName(rule, host, literal);
  return !literal && matchHost(rule.host, host);
}

function bareAddress(host: string): string {
  return host.startsWith("[") ? host.slice(1, -1) : host;
}

/**
 * The compiled rules of one sandbox or identity; `off` when the network is off.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { NetworkRules } from "./rules.ts";
 * const rules = NetworkRules.compile({ allow: ["*.example.com:443", "127.0.0.2"], deny: ["bad.example.com"] });
 * assert.equal(rules.decide("api.example.com", 443, ["93.184.215.14"]).rule, "allow:*.example.com:443");
 * assert.equal(rules.decide("bad.example.com", 443, []).rule, "deny:bad.example.com");
 * assert.equal(rules.decide("other.org", 443, []).rule, "allow");
 * assert.equal(rules.decide("127.0.0.2", 80, ["127.0.0.2"]).allowed, true);
 * assert.equal(NetworkRules.compile({}).decide("169.254.169.254", 80, ["169.254.169.254"]).rule, "private:link-local");
 * assert.equal(NetworkRules.off().decide("example.com", 443, []).rule, "network:off");
 * ```
 */
export class NetworkRules {
  /** Whether any connection may be made at all. */
  readonly enabled: boolean;
  /** Allow rules. */
  readonly allow: readonly NetworkRule[];
  /** Deny rules. */
  readonly deny: readonly NetworkRule[];
  /** Static name resolution: canonical name to addresses. */
  readonly hosts: ReadonlyMap<string, readonly string[]>;
  /** Credentials swapped in by the proxy, by host. */
  readonly secrets: readonly SecretRule[];
  /** Extra PEM roots for intercepted hosts. */
  readonly ca: readonly string[];

  private constructor(
    enabled: boolean,
    allow: NetworkRule[],
    deny: NetworkRule[],
    hosts: Map<string, string[]>,
    secrets: SecretRule[] = [],
    ca: string[] = [],
  ) {
    this.enabled = enabled;
    this.allow = allow;
    this.deny = deny;
    this.hosts = hosts;
    this.secrets = secrets;
    this.ca = ca;
  }

  /** No network at all. */
  static off(): NetworkRules {
    return new NetworkRules(false, [], [], new Map());
  }

  /** The credentials to swap in on a connection to `hostname:port` (a name, not an address). */
  secretsFor(hostname: string, port: number): SecretRule[] {
    const host = canonicalHost(hostname);
    if (!host || parseIp(bareAddress(host))) return [];
    return this.secrets.filter((s) => portMatches(s.rule, port) && matchesName(s.rule, host, null));
  }

  /**
   * Compile settings; throws an `Error` naming the key and the bad rule. `where` prefixes the
   * message (`network`, `policy: network`, …).
   */
  static compile(config: NetworkConfig, where = "network"): NetworkRules {
    for (const key of Object.keys(config)) {
      if (!NETWORK_CONFIG_KEYS.includes(key)) {
        throw new Error(
          `${where}: unknown key "${key}" (known: ${NETWORK_CONFIG_KEYS.join(", ")})`,
        );
      }
    }
    const list = (key: "allow" | "deny") => {
      const value = config[key] ?? [];
      if (!Array.isArray(value)) throw new Error(`${where}.${key} must be a list of rules`);
      return value.map((r, i) => {
        if (typeof r !== "string") throw new Error(`${where}.${key}[${i}] must be a string`);
        try {
          return parseNetworkRule(r);
        } catch (e) {
          throw new Error(`${where}.${key}[${i}]: ${(e as Error).message}`);
        }
      });
    };
    const hosts = new Map<string, string[]>();
    for (const [name, value] of Object.entries(config.hosts ?? {})) {
      const canonical = canonicalHost(name);
      if (!canonical || parseIp(bareAddress(canonical))) {
        throw new Error(`${where}.hosts: "${name}" is not a host name`);
      }
      const addresses = Array.isArray(value) ? value : [value];
      if (addresses.length === 0) throw new Error(`${where}.hosts.${name}: no address`);
      for (const a of addresses) {
        if (typeof a !== "string" || !parseIp(a)) {
          throw new Error(`${where}.hosts.${name}: ${JSON.stringify(a)} is not an IP address`);
        }
      }
      hosts.set(canonical, addresses);
    }
    const secrets = (config.secrets ?? []).map((secret, i) => {
      const at = `${where}.secrets[${i}]`;
      if (typeof secret !== "object" || secret === null) throw new Error(`${at} must be an object`);
      for (const key of Object.keys(secret)) {
        if (!SECRET_CONFIG_KEYS.includes(key)) {
          throw new Error(`${at}: unknown key "${key}" (known: ${SECRET_CONFIG_KEYS.join(", ")})`);
        }
      }
      if (typeof secret.value !== "string" || secret.value === "" || /[\r\n]/.test(secret.value)) {
        throw new Error(`${at}.value must be a one-line string`);
      }
      if (typeof secret.env !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(secret.env)) {
        throw new Error(`${at}.env must be an environment variable name`);
      }
      let rule: NetworkRule;
      try {
        rule = parseNetworkRule(String(secret.host));
      } catch (e) {
        throw new Error(`${at}.host: ${(e as Error).message}`);
      }
      if (rule.host.kind === "network" || rule.host.kind === "any") {
        throw new Error(`${at}.host must name a host (secrets go over TLS, which names it)`);
      }
      const placeholder = secret.placeholder ?? "";
      if (placeholder !== "" && (placeholder.length < 16 || placeholder.includes(secret.value))) {
        throw new Error(`${at}.placeholder must be at least 16 characters, not the secret`);
      }
      return { rule, placeholder, value: secret.value };
    });
    const ca = config.ca ?? [];
    if (!Array.isArray(ca) || ca.some((c) => typeof c !== "string" || !c.includes("BEGIN CERT"))) {
      throw new Error(`${where}.ca must be a list of PEM certificates`);
    }
    return new NetworkRules(true, list("allow"), list("deny"), hosts, secrets, ca);
  }

  /**
   * Decide a connection to `hostname:port`. `addresses` are every address the name resolved
   * to (the proxy connects to one of exactly these); empty before the lookup, so a name the
   * rules refuse is never looked up. Any refused address refuses the connection.
   */
  decide(hostname: string, port: number, addresses: readonly string[]): NetworkDecision {
    const shown = `${hostname}:${port}`;
    const refuse = (rule: string, why: string): NetworkDecision => ({
      allowed: false,
      rule,
      reason: `${shown} is refused: ${why}`,
    });
    if (!this.enabled) return refuse("network:off", "the network is off");
    const host = canonicalHost(hostname);
    if (!host || port < 1 || port > 65535) return refuse("invalid", "not a host and port");
    const literal = parseIp(bareAddress(host));
    const judged = literal ? [bareAddress(host), ...addresses] : addresses;
    const deny = this.deny.find((r) =>
      portMatches(r, port) &&
      (matchesName(r, host, literal) || judged.some((a) => matchesAddress(r, a)))
    );
    if (deny) return refuse(`deny:${deny.source}`, `the deny rule ${deny.source} matches`);
    let allowedBy: NetworkRule | undefined;
    if (this.allow.length > 0) {
      allowedBy = this.allow.find((r) => portMatches(r, port) && matchesName(r, host, literal)) ??
        this.allow.find((r) =>
          portMatches(r, port) && r.host.kind === "network" && addresses.length > 0 &&
          addresses.every((a) => matchesAddress(r, a))
        );
      if (!allowedBy) return refuse("allow", "no allow rule matches it");
    }
    const named = loopbackName(host);
    for (const address of judged) {
      const range = named ?? addressRange(address);
      if (!range) continue;
      if (!this.allow.some((r) => portMatches(r, port) && names(r, host, literal))) {
        return refuse(`private:${range}`, `it is a ${range} address (${address})`);
      }
    }
    if (named && judged.length === 0 && !this.allow.some((r) => names(r, host, literal))) {
      return refuse(`private:${named}`, `${host} is a loopback name`);
    }
    return {
      allowed: true,
      rule: allowedBy ? `allow:${allowedBy.source}` : "public",
      reason: `${shown} is allowed`,
    };
  }
}
