/**
 * The SOCKS5 server handshake (RFC 1928), shared by the browser's SOCKS guard and the egress
 * proxy: no authentication, the CONNECT command only, IPv4, IPv6 and name addresses.
 *
 * @module
 */

import type { ConnReader } from "./conn_reader.ts";

/** What replies are written to: a connection. */
export interface ByteSink {
  /** Write some of `p`; how many bytes were written. */
  write(p: Uint8Array): Promise<number>;
}

/** SOCKS5 reply codes used here (RFC 1928). */
export const SOCKS_REPLY = {
  succeeded: 0x00,
  failure: 0x01,
  notAllowed: 0x02,
  hostUnreachable: 0x04,
  refused: 0x05,
  commandNotSupported: 0x07,
  addressNotSupported: 0x08,
} as const;

/** Where a SOCKS5 client asked to connect. */
export interface SocksTarget {
  /** A name, or an address as text. */
  host: string;
  /** The port. */
  port: number;
}

function formatIPv6(b: Uint8Array): string {
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((b[i] << 8) | b[i + 1]).toString(16));
  return words.join(":");
}

/** Send a reply (with an empty IPv4 bound address). */
export async function socksReply(conn: ByteSink, code: number): Promise<void> {
  await conn.write(new Uint8Array([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]));
}

/**
 * Run the handshake up to the request: answers the method selection, reads the request, and
 * returns its target; or answers the refusal itself (no acceptable method, a command other than
 * CONNECT, an unknown address type) and returns null.
 */
export async function readSocksRequest(
  reader: ConnReader,
  conn: ByteSink,
): Promise<SocksTarget | null> {
  const [version, methodCount] = await reader.take(2);
  const methods = await reader.take(methodCount);
  if (version !== 0x05 || !methods.includes(0x00)) {
    await conn.write(new Uint8Array([0x05, 0xff]));
    return null;
  }
  await conn.write(new Uint8Array([0x05, 0x00]));
  const [, command, , addressType] = await reader.take(4);
  let host: string;
  if (addressType === 0x01) host = [...await reader.take(4)].join(".");
  else if (addressType === 0x04) host = formatIPv6(await reader.take(16));
  else if (addressType === 0x03) {
    const [length] = await reader.take(1);
    host = new TextDecoder().decode(await reader.take(length));
  } else {
    await socksReply(conn, SOCKS_REPLY.addressNotSupported);
    return null;
  }
  const portBytes = await reader.take(2);
  const port = (portBytes[0] << 8) | portBytes[1];
  if (command !== 0x01) {
    await socksReply(conn, SOCKS_REPLY.commandNotSupported);
    return null;
  }
  return { host, port };
}
