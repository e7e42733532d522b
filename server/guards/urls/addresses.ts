/**
 * IP addresses and the ranges the browser may not reach unless a policy names them: loopback,
 * link-local (the cloud metadata address `169.254.169.254` among them), private, shared
 * (carrier-grade NAT), unspecified, multicast and reserved ranges, in IPv4 and IPv6. IPv6 forms
 * that carry an IPv4 address (`::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are
 * judged by that IPv4 address, so `::ffff:127.0.0.1` is loopback.
 *
 * @module
 */

/** Why an address is not public. */
export type AddressRange =
  | "loopback"
  | "link-local"
  | "private"
  | "shared"
  | "unspecified"
  | "multicast"
  | "reserved";

/**
 * Parse an IPv4 address in dotted-decimal form into its 4 bytes, or `null`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseIPv4 } from "./addresses.ts";
 * assert.deepEqual(parseIPv4("169.254.169.254"), new Uint8Array([169, 254, 169, 254]));
 * assert.equal(parseIPv4("example.com"), null);
 * ```
 */
export function parseIPv4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!/^\d{1,3}$/.test(parts[i])) return null;
    const n = Number(parts[i]);
    if (n > 255) return null;
    bytes[i] = n;
  }
  return bytes;
}

/**
 * Parse an IPv6 address (brackets allowed, a zone `%eth0` ignored, a trailing dotted IPv4 part
 * allowed) into its 16 bytes, or `null`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseIPv6 } from "./addresses.ts";
 * assert.equal(parseIPv6("[::1]")?.[15], 1);
 * assert.equal(parseIPv6("::ffff:127.0.0.1")?.[12], 127);
 * ```
 */
export function parseIPv6(text: string): Uint8Array | null {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(":")) return null;
  const words: number[] = [];
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const parseHalf = (half: string): number[] | null => {
    if (half === "") return [];
    const out: number[] = [];
    const groups = half.split(":");
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i];
      if (i === groups.length - 1 && g.includes(".")) {
        const v4 = parseIPv4(g);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
        out.push(parseInt(g, 16));
      }
    }
    return out;
  };
  const head = parseHalf(halves[0]);
  const tail = halves.length === 2 ? parseHalf(halves[1]) : [];
  if (!head || !tail) return null;
  if (halves.length === 2) {
    const fill = 8 - head.length - tail.length;
    if (fill < 1) return null;
    words.push(...head, ...new Array(fill).fill(0), ...tail);
  } else {
    words.push(...head);
  }
  if (words.length !== 8) return null;
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[i * 2] = w >> 8;
    bytes[i * 2 + 1] = w & 0xff;
  });
  return bytes;
}

/** The bytes of an IPv4 or IPv6 address, or `null` when `text` is not an address. */
export function parseIp(text: string): Uint8Array | null {
  return parseIPv4(text) ?? parseIPv6(text);
}

/** True when the first `bits` bits of `bytes` equal those of `prefix`. */
function inPrefix(bytes: Uint8Array, prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((bytes[byte] & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
}

/**
 * Whether `address` lies in the network `prefix`/`bits` (both IPv4 or both IPv6).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { inNetwork, parseIp } from "./addresses.ts";
 * assert.equal(inNetwork(parseIp("10.1.2.3")!, parseIp("10.0.0.0")!, 8), true);
 * assert.equal(inNetwork(parseIp("11.1.2.3")!, parseIp("10.0.0.0")!, 8), false);
 * ```
 */
export function inNetwork(address: Uint8Array, prefix: Uint8Array, bits: number): boolean {
  return address.length === prefix.length && inPrefix(address, [...prefix], bits);
}

type Rule = readonly [prefix: readonly number[], bits: number, range: AddressRange];

const IPV4_RULES: readonly Rule[] = [
  [[0], 8, "unspecified"],
  [[10], 8, "private"],
  [[100, 64], 10, "shared"],
  [[127], 8, "loopback"],
  [[169, 254], 16, "link-local"],
  [[172, 16], 12, "private"],
  [[192, 0, 0], 24, "reserved"],
  [[192, 0, 2], 24, "reserved"],
  [[192, 88, 99], 24, "reserved"],
  [[192, 168], 16, "private"],
  [[198, 18], 15, "reserved"],
  [[198, 51, 100], 24, "reserved"],
  [[203, 0, 113], 24, "reserved"],
  [[224], 4, "multicast"],
  [[240], 4, "reserved"],
];

const IPV6_RULES: readonly Rule[] = [
  [[], 128, "unspecified"],
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"],
  [[0x00, 0x64, 0xff, 0x9b, 0, 1], 48, "private"],
  [[0x01], 64, "reserved"],
  [[0x20, 0x01, 0x0d, 0xb8], 32, "reserved"],
  [[0x20, 0x01, 0, 0], 32, "reserved"],
  [[0xfc], 7, "private"],
  [[0xfe, 0x80], 10, "link-local"],
  [[0xfe, 0xc0], 10, "private"],
  [[0xff], 8, "multicast"],
  // The rest of ::/96 (IPv4-compatible, deprecated) and ::/8 is not routable.
  [[], 8, "reserved"],
];

/** An IPv4 address carried inside an IPv6 one, if the form is one that routes to it. */
function embeddedIPv4(b: Uint8Array): Uint8Array | null {
  const mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
  if (inPrefix(b, mapped, 96)) return b.slice(12, 16);
  if (inPrefix(b, [0x00, 0x64, 0xff, 0x9b], 96)) return b.slice(12, 16);
  if (inPrefix(b, [0x20, 0x02], 16)) return b.slice(2, 6);
  return null;
}

/**
 * The non-public range an address belongs to, or `null` for a public address.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { addressRange } from "./addresses.ts";
 * assert.equal(addressRange("169.254.169.254"), "link-local");
 * assert.equal(addressRange("::ffff:127.0.0.1"), "loopback");
 * assert.equal(addressRange("93.184.215.14"), null);
 * ```
 */
export function addressRange(address: string | Uint8Array): AddressRange | null {
  const bytes = typeof address === "string" ? parseIp(address) : address;
  if (!bytes) throw new Error(`not an IP address: ${address}`);
  if (bytes.length === 4) {
    for (const [prefix, bits, range] of IPV4_RULES) if (inPrefix(bytes, prefix, bits)) return range;
    return null;
  }
  const v4 = embeddedIPv4(bytes);
  if (v4) return addressRange(v4);
  for (const [prefix, bits, range] of IPV6_RULES) if (inPrefix(bytes, prefix, bits)) return range;
  return null;
}
