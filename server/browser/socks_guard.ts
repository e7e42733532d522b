/**
 * The connection-level half of the URL guard: a SOCKS5 proxy on loopback through which one
 * browser context makes every connection (HTTP, HTTPS, WebSocket; Chromium gets no proxy
 * bypass, not even for loopback).
 *
 * Chromium hands a SOCKS5 proxy the host name, not an address, so the name is resolved here,
 * once: every address it resolves to must pass {@linkcode UrlGuard.checkConnection}, and the
 * connection then goes to one of exactly those addresses. That closes DNS rebinding (a name
 * that answers public to the check and private to the connect) and covers what request
 * interception never sees (WebSockets, service workers, pop-ups).
 *
 * Only the CONNECT command with no authentication is spoken; anything else is refused.
 *
 * @module
 */

import { lookup } from "node:dns/promises";
import type { UrlGuard, UrlRefusal } from "../guards/urls/index.ts";
import { parseIp } from "../guards/urls/index.ts";

/** SOCKS5 reply codes used here (RFC 1928). */
const REPLY = {
  succeeded: 0x00,
  failure: 0x01,
  notAllowed: 0x02,
  hostUnreachable: 0x04,
  refused: 0x05,
  commandNotSupported: 0x07,
  addressNotSupported: 0x08,
} as const;

/** What the proxy tells its context about. */
export interface ProxyEvents {
  /** A connection the guard refused (reported to the context's console buffer). */
  refused(refusal: UrlRefusal): void;
  /** A connection the guard allowed but that could not be made: `host:port` and why. */
  unreachable(target: string, why: string): void;
}

/** Reads exact byte counts from a connection. */
class ExactReader {
  #buf = new Uint8Array(0);
  readonly #conn: Deno.Conn;
  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }
  async take(n: number): Promise<Uint8Array> {
    while (this.#buf.length < n) {
      const chunk = new Uint8Array(Math.max(512, n));
      const got = await this.#conn.read(chunk);
      if (got === null) throw new Error("closed during the SOCKS handshake");
      const merged = new Uint8Array(this.#buf.length + got);
      merged.set(this.#buf);
      merged.set(chunk.subarray(0, got), this.#buf.length);
      this.#buf = merged;
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }
  /** Bytes read past the handshake (a client that did not wait for the reply). */
  rest(): Uint8Array {
    return this.#buf;
  }
}

function formatIPv6(b: Uint8Array): string {
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((b[i] << 8) | b[i + 1]).toString(16));
  return words.join(":");
}

async function resolveAll(host: string): Promise<string[]> {
  if (parseIp(host)) return [host];
  const found = await lookup(host, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

/** A connection to the first of `addresses` that answers. */
async function connectAny(
  addresses: readonly string[],
  port: number,
): Promise<Deno.Conn | undefined> {
  for (const hostname of addresses) {
    try {
      return await Deno.connect({ hostname, port });
    } catch { /* the next address */ }
  }
  return undefined;
}

/**
 * A SOCKS5 proxy that asks a {@linkcode UrlGuard} about every connection.
 */
export class SocksGuard {
  readonly #listener: Deno.Listener;
  readonly #guard: UrlGuard;
  readonly #events: ProxyEvents;
  readonly #open = new Set<Deno.Conn>();
  readonly #accepting: Promise<void>;
  readonly #handlers = new Set<Promise<void>>();

  private constructor(guard: UrlGuard, events: ProxyEvents) {
    this.#guard = guard;
    this.#events = events;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#accepting = this.#accept();
  }

  /** Start a proxy on a free loopback port. */
  static listen(guard: UrlGuard, events: ProxyEvents): SocksGuard {
    return new SocksGuard(guard, events);
  }

  /** The port it listens on. */
  get port(): number {
    return (this.#listener.addr as Deno.NetAddr).port;
  }

  /** The `--proxy-server` value for Chromium. */
  get proxyServer(): string {
    return `socks5://127.0.0.1:${this.port}`;
  }

  async #accept(): Promise<void> {
    try {
      for await (const conn of this.#listener) {
        const h = this.#serve(conn).catch(() => {}).finally(() => this.#handlers.delete(h));
        this.#handlers.add(h);
      }
    } catch { /* listener closed */ }
  }

  #track(conn: Deno.Conn): void {
    this.#open.add(conn);
  }

  #drop(conn: Deno.Conn): void {
    if (this.#open.delete(conn)) {
      try {
        conn.close();
      } catch { /* already closed */ }
    }
  }

  async #reply(conn: Deno.Conn, code: number): Promise<void> {
    await conn.write(new Uint8Array([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]));
  }

  async #serve(client: Deno.Conn): Promise<void> {
    this.#track(client);
    let upstream: Deno.Conn | undefined;
    try {
      const reader = new ExactReader(client);
      const [version, methodCount] = await reader.take(2);
      const methods = await reader.take(methodCount);
      if (version !== 0x05 || !methods.includes(0x00)) {
        await client.write(new Uint8Array([0x05, 0xff]));
        return;
      }
      await client.write(new Uint8Array([0x05, 0x00]));
      const [, command, , addressType] = await reader.take(4);
      let host: string;
      if (addressType === 0x01) host = [...await reader.take(4)].join(".");
      else if (addressType === 0x04) host = formatIPv6(await reader.take(16));
      else if (addressType === 0x03) {
        const [length] = await reader.take(1);
        host = new TextDecoder().decode(await reader.take(length));
      } else return await this.#reply(client, REPLY.addressNotSupported);
      const portBytes = await reader.take(2);
      const port = (portBytes[0] << 8) | portBytes[1];
      if (command !== 0x01) return await this.#reply(client, REPLY.commandNotSupported);

      // Host and port first (no lookup for a name the rules refuse), then every address.
      let refusal = this.#guard.checkConnection(host, port, []);
      if (!refusal) {
        let addresses: string[];
        try {
          addresses = await resolveAll(host);
        } catch {
          this.#events.unreachable(`${host}:${port}`, `the name ${host} was not found`);
          return await this.#reply(client, REPLY.hostUnreachable);
        }
        refusal = this.#guard.checkConnection(host, port, addresses);
        if (!refusal) upstream = await connectAny(addresses, port);
        if (!refusal && !upstream) {
          this.#events.unreachable(`${host}:${port}`, `${host}:${port} refused the connection`);
          return await this.#reply(client, REPLY.refused);
        }
      }
      if (refusal) {
        this.#events.refused(refusal);
        return await this.#reply(client, REPLY.notAllowed);
      }
      this.#track(upstream!);
      await this.#reply(client, REPLY.succeeded);
      const early = reader.rest();
      if (early.length > 0) await upstream!.write(early);
      await this.#pipe(client, upstream!);
    } finally {
      this.#drop(client);
      if (upstream) this.#drop(upstream);
    }
  }

  /** Copy both ways until either side ends, then close both. */
  async #pipe(a: Deno.Conn, b: Deno.Conn): Promise<void> {
    const copy = async (from: Deno.Conn, to: Deno.Conn) => {
      const buf = new Uint8Array(64 * 1024);
      try {
        for (;;) {
          const n = await from.read(buf);
          if (n === null) return;
          let off = 0;
          while (off < n) off += await to.write(buf.subarray(off, n));
        }
      } catch { /* either side closed */ }
    };
    await Promise.race([copy(a, b), copy(b, a)]);
    this.#drop(a);
    this.#drop(b);
  }

  /** Stop listening and close every connection. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const c of [...this.#open]) this.#drop(c);
    await this.#accepting;
    await Promise.allSettled([...this.#handlers]);
  }
}
