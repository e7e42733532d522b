/**
 * The server name (SNI) of a TLS ClientHello, read from the first bytes a client sends through
 * a `CONNECT` tunnel, so the proxy can check it names the host the tunnel was asked for (a
 * client that asks for an allowed host and then names another in its handshake is fronting a
 * domain).
 *
 * @module
 */

import type { ConnReader } from "./conn_reader.ts";

/** Largest ClientHello read (several records with large key shares fit). */
const MAX_HELLO = 64 * 1024;

/** What the first bytes of a tunnel are. */
export type HelloResult =
  | { kind: "tls"; serverName: string | null }
  | { kind: "other" }
  | { kind: "malformed" };

function u16(b: Uint8Array, at: number): number {
  return (b[at] << 8) | b[at + 1];
}

/**
 * Read (without consuming) the client's first flight: a TLS handshake gives its SNI (null when
 * it names none); anything else is `other`.
 */
export async function peekClientHello(reader: ConnReader): Promise<HelloResult> {
  // One byte first: a protocol whose client sends less than a record header must not stall.
  const kind = await reader.peek(1);
  if (kind.length < 1 || kind[0] !== 0x16) return { kind: "other" };
  const head = await reader.peek(5);
  if (head.length < 5 || head[0] !== 0x16 || head[1] !== 0x03) return { kind: "other" };
  // Gather handshake bytes across records until the ClientHello is whole.
  const body: number[] = [];
  let offset = 0;
  let needed = Infinity;
  while (body.length < needed) {
    const header = await reader.peek(offset + 5);
    if (header.length < offset + 5 || header[offset] !== 0x16) return { kind: "malformed" };
    const length = u16(header, offset + 3);
    const record = await reader.peek(offset + 5 + length);
    if (record.length < offset + 5 + length) return { kind: "malformed" };
    body.push(...record.subarray(offset + 5, offset + 5 + length));
    offset += 5 + length;
    if (body.length >= 4) {
      if (body[0] !== 0x01) return { kind: "malformed" };
      needed = 4 + ((body[1] << 16) | (body[2] << 8) | body[3]);
    }
    if (offset > MAX_HELLO) return { kind: "malformed" };
  }
  return parseHello(new Uint8Array(body.slice(4, needed)));
}

/**
 * The SNI of a ClientHello body (after the 4-byte handshake header).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseHello } from "./tls_hello.ts";
 * assert.deepEqual(parseHello(new Uint8Array(10)), { kind: "malformed" });
 * ```
 */
export function parseHello(b: Uint8Array): HelloResult {
  try {
    // Every length read must lie inside the body: a typed array answers `undefined` past its
    // end, which would turn a truncated hello into a valid one with no name.
    const fits = (at: number, size: number) => at + size <= b.length;
    let at = 2 + 32; // version, random
    if (!fits(at, 1)) return { kind: "malformed" };
    at += 1 + b[at]; // session id
    if (!fits(at, 2)) return { kind: "malformed" };
    at += 2 + u16(b, at); // cipher suites
    if (!fits(at, 1)) return { kind: "malformed" };
    at += 1 + b[at]; // compression methods
    if (at === b.length) return { kind: "tls", serverName: null };
    if (!fits(at, 2)) return { kind: "malformed" };
    const end = at + 2 + u16(b, at);
    at += 2;
    if (end > b.length) return { kind: "malformed" };
    while (at + 4 <= end) {
      const type = u16(b, at);
      const length = u16(b, at + 2);
      at += 4;
      if (type === 0x0000) {
        // server_name_list: length, then entries of type (0 = host_name), length, name
        let p = at + 2;
        while (p + 3 <= at + length) {
          const nameType = b[p];
          const nameLength = u16(b, p + 1);
          if (nameType === 0) {
            const name = new TextDecoder("utf-8", { fatal: true }).decode(
              b.subarray(p + 3, p + 3 + nameLength),
            );
            return { kind: "tls", serverName: name };
          }
          p += 3 + nameLength;
        }
        return { kind: "malformed" };
      }
      at += length;
    }
    if (at > b.length) return { kind: "malformed" };
    return { kind: "tls", serverName: null };
  } catch {
    return { kind: "malformed" };
  }
}
