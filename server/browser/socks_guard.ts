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
 * Only the CONNECT command with no authentication is spoken; anything else is refused. The
 * handshake, name resolution and connecting are the egress proxy's (`server/egress/`).
 *
 * @module
 */

import type { UrlGuard, UrlRefusal } from "../guards/urls/index.ts";
import { ConnReader } from "../egress/conn_reader.ts";
import { connectAny, resolveAll } from "../egress/connect.ts";
import { readSocksRequest, SOCKS_REPLY as REPLY, socksReply } from "../egress/socks5.ts";

/** What the proxy tells its context about. */
export interface ProxyEvents {
  /** A connection the guard refused (reported to the context's console buffer). */
  refused(refusal: UrlRefusal): void;
  /** A connection the guard allowed but that could not be made: `host:port` and why. */
  unreachable(target: string, why: string): void;
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
    await socksReply(conn, code);
  }

  async #serve(client: Deno.Conn): Promise<void> {
    this.#track(client);
    let upstream: Deno.Conn | undefined;
    try {
      const reader = new ConnReader(client);
      const target = await readSocksRequest(reader, client);
      if (!target) return;
      const { host, port } = target;

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
