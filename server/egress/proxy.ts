/**
 * The egress proxy: the one way out for a sandbox's (or an identity's) processes. One listener
 * (TCP, or a Unix socket a local sandbox reaches through its bridge) speaks three protocols,
 * told apart by the first byte:
 *
 * - SOCKS5 (`ALL_PROXY=socks5h://…`): any TCP, such as git over SSH;
 * - HTTP `CONNECT host:port` (`HTTPS_PROXY`): a tunnel, for TLS. When the client's first flight
 *   is a TLS ClientHello, its server name (SNI) must be the host asked for, or the tunnel is
 *   closed (rule `sni`);
 * - plain HTTP with an absolute URL (`HTTP_PROXY`): one request per connection, sent on with
 *   `Connection: close` and the proxy's own headers removed.
 *
 * Every connection is decided by {@linkcode NetworkRules}: the host and port first (a name the
 * rules refuse is never looked up), then every address the name resolves to, once, and the
 * connection goes to one of exactly those (no DNS rebinding). A refusal gets an answer a tool
 * can show: HTTP 403 with `X-Sandbar-Egress-Rule` and `X-Sandbar-Egress-Reason` headers, or the
 * SOCKS reply "connection not allowed by ruleset" (2). Every connection, allowed or refused, is
 * one audit line (`endpoint` `egress`, with the identity, host, port and rule).
 *
 * {@linkcode EgressProxy.update} swaps the rules while it runs: new connections use the new
 * rules at once, and open connections the new rules refuse are closed.
 *
 * @module
 */

import type { AuditEntry } from "../pipeline/audit.ts";
import { closeQuietly, copyThenCloseWrite, writeAll } from "./conn_copy.ts";
import { ConnReader } from "./conn_reader.ts";
import { connectAny, resolveAll } from "./connect.ts";
import type { NetworkDecision, NetworkRules } from "./rules.ts";
import { readSocksRequest, SOCKS_REPLY, socksReply } from "./socks5.ts";
import { peekClientHello } from "./tls_hello.ts";
// Type only: the certificate library loads with the first intercepted connection, never in a
// server without secrets (its start graph stays small).
import type { EgressCa } from "./tls_intercept.ts";

/** Where the proxy listens: a TCP address, or a Unix socket path. */
export type ProxyAddress = { hostname: string; port: number } | { path: string };

/** Options of {@linkcode EgressProxy.listen}. */
export interface EgressProxyOptions {
  /** Whose connections these are (audit lines name it). */
  identity: string;
  /** The rules in force at the start. */
  rules: NetworkRules;
  /** Where audit lines go; none when left out. */
  audit?: (entry: AuditEntry) => void;
  /** Which connections are audited: `all` (the default), `deny` (refusals only) or `off`. */
  auditSetting?: "off" | "deny" | "all";
  /**
   * How long a client may take to say where it goes (its request, and a tunnel's first bytes)
   * before it is closed; default 30 s. An idle client holds a descriptor and, once a tunnel is
   * open, a connection to its host.
   */
  handshakeTimeoutMs?: number;
  /**
   * The certificate authority that signs the certificates of hosts a secret is attached to
   * (see `tls_intercept.ts`); without one, such hosts are tunnelled untouched.
   */
  ca?: EgressCa;
}

/** One open connection through the proxy. */
interface Tunnel {
  host: string;
  port: number;
  addresses: string[];
  client: Deno.Conn;
  upstream: Deno.Conn;
  /** Connections of an intercepted tunnel (its TLS sides). */
  others: Deno.Conn[];
}

type Opened =
  | { ok: true; upstream: Deno.TcpConn; addresses: string[] }
  | { ok: false; status: 403 | 502; rule: string; reason: string };

const HEAD_END = new TextEncoder().encode("\r\n\r\n");
const MAX_HEAD = 64 * 1024;
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "upgrade",
]);
const encoder = new TextEncoder();

/** Header values may not carry line breaks. */
function headerValue(text: string): string {
  return text.replace(/[\r\n]+/g, " ").slice(0, 500);
}

/** Whether a TLS server name is the host a tunnel was asked for. */
function sameHost(serverName: string, host: string): boolean {
  const norm = (h: string) => h.toLowerCase().replace(/\.$/, "").replace(/^\[|\]$/g, "");
  return norm(serverName) === norm(host);
}

/** `host:port` of a CONNECT request (`[v6]:port` too), or null. */
function parseAuthority(text: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/\s]+):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) return null;
  return { host: m[1].startsWith("[") ? m[1].slice(1, -1) : m[1], port: Number(m[2]) };
}

/**
 * A running egress proxy.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { EgressProxy } from "./proxy.ts";
 * import { NetworkRules } from "./rules.ts";
 * const lines: string[] = [];
 * const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
 *   identity: "demo",
 *   rules: NetworkRules.compile({ allow: ["example.com"] }),
 *   audit: (e) => lines.push(`${e.decision} ${e.host}:${e.port} ${e.rule}`),
 * });
 * const res = await fetch("http://169.254.169.254/latest/meta-data/", {
 *   client: Deno.createHttpClient({ proxy: { url: `http://127.0.0.1:${proxy.port}` } }),
 * });
 * assert.equal(res.status, 403);
 * assert.equal(res.headers.get("x-sandbar-egress-rule"), "allow");
 * await res.body?.cancel();
 * assert.deepEqual(lines, ["deny 169.254.169.254:80 allow"]);
 * await proxy.close();
 * ```
 */
export class EgressProxy {
  readonly #listener: Deno.Listener;
  readonly #identity: string;
  readonly #audit: ((entry: AuditEntry) => void) | undefined;
  readonly #auditSetting: "off" | "deny" | "all";
  readonly #ca: EgressCa | undefined;
  readonly #handshakeTimeoutMs: number;
  readonly #handshakes = new Map<Deno.Conn, ReturnType<typeof setTimeout>>();
  #rules: NetworkRules;
  readonly #tunnels = new Set<Tunnel>();
  readonly #pending = new Set<Deno.Conn>();
  readonly #handlers = new Set<Promise<void>>();
  readonly #accepting: Promise<void>;

  private constructor(listener: Deno.Listener, options: EgressProxyOptions) {
    this.#listener = listener;
    this.#identity = options.identity;
    this.#rules = options.rules;
    this.#audit = options.audit;
    this.#auditSetting = options.auditSetting ?? "all";
    this.#ca = options.ca;
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? 30_000;
    this.#accepting = this.#accept();
  }

  /** Start a proxy at `address` (a TCP port 0 picks a free one). */
  static listen(address: ProxyAddress, options: EgressProxyOptions): EgressProxy {
    const listener = "path" in address
      ? Deno.listen({ transport: "unix", path: address.path })
      : Deno.listen({ hostname: address.hostname, port: address.port });
    return new EgressProxy(listener, options);
  }

  /** The TCP port it listens on (0 on a Unix socket). */
  get port(): number {
    const addr = this.#listener.addr;
    return addr.transport === "tcp" ? addr.port : 0;
  }

  /** The rules in force. */
  get rules(): NetworkRules {
    return this.#rules;
  }

  /** How many connections are open through it. */
  get openConnections(): number {
    return this.#tunnels.size;
  }

  /**
   * Put `rules` in force: new connections use them at once, and every open connection they
   * refuse is closed (and audited with the code `egress_closed`). Returns how many were closed.
   */
  update(rules: NetworkRules): number {
    this.#rules = rules;
    let closed = 0;
    for (const t of [...this.#tunnels]) {
      const decision = rules.decide(t.host, t.port, t.addresses);
      if (decision.allowed) continue;
      this.#tunnels.delete(t);
      for (const c of [t.client, t.upstream, ...t.others]) closeQuietly(c);
      this.#record(t.host, t.port, decision, 403, "egress_closed");
      closed++;
    }
    return closed;
  }

  async #accept(): Promise<void> {
    try {
      for await (const conn of this.#listener) {
        if (conn.remoteAddr.transport === "tcp") (conn as Deno.TcpConn).setNoDelay(true);
        this.#pending.add(conn);
        const h = this.#serve(conn).catch(() => {}).finally(() => {
          this.#pending.delete(conn);
          closeQuietly(conn);
          this.#handlers.delete(h);
        });
        this.#handlers.add(h);
      }
    } catch { /* the listener closed */ }
  }

  #record(
    host: string,
    port: number,
    decision: Pick<NetworkDecision, "rule"> & { allowed?: boolean },
    status: number,
    code: string | null,
  ): void {
    if (!this.#audit || this.#auditSetting === "off") return;
    const result = status < 400 ? "allow" : status >= 500 ? "error" : "deny";
    if (this.#auditSetting === "deny" && result === "allow") return;
    this.#audit({
      time: new Date().toISOString(),
      endpoint: "egress",
      identity: this.#identity,
      decision: result,
      status,
      code,
      host,
      port,
      rule: decision.rule,
    });
  }

  /** Decide, resolve, decide again, connect; every outcome audited. */
  async #open(host: string, port: number): Promise<Opened> {
    const refuse = (d: NetworkDecision): Opened => {
      this.#record(host, port, d, 403, "egress_denied");
      return { ok: false, status: 403, rule: d.rule, reason: d.reason };
    };
    const unreachable = (why: string): Opened => {
      this.#record(host, port, { rule: "unreachable" }, 502, "egress_unreachable");
      return { ok: false, status: 502, rule: "unreachable", reason: why };
    };
    const first = this.#rules.decide(host, port, []);
    if (!first.allowed) return refuse(first);
    let addresses: string[];
    try {
      addresses = await resolveAll(host, this.#rules.hosts);
    } catch {
      return unreachable(`the name ${host} was not found`);
    }
    const decision = this.#rules.decide(host, port, addresses);
    if (!decision.allowed) return refuse(decision);
    const upstream = await connectAny(addresses, port);
    if (!upstream) return unreachable(`${host}:${port} did not accept the connection`);
    // The rules may have changed while the connection was being made.
    const now = this.#rules.decide(host, port, addresses);
    if (!now.allowed) {
      closeQuietly(upstream);
      return refuse(now);
    }
    this.#record(host, port, now, 200, null);
    return { ok: true, upstream, addresses };
  }

  /** The client has said where it goes: no more handshake deadline. */
  #handshaken(client: Deno.Conn): void {
    clearTimeout(this.#handshakes.get(client));
    this.#handshakes.delete(client);
  }

  async #serve(client: Deno.Conn): Promise<void> {
    this.#handshakes.set(client, setTimeout(() => closeQuietly(client), this.#handshakeTimeoutMs));
    try {
      await this.#dispatch(client);
    } finally {
      this.#handshaken(client);
    }
  }

  async #dispatch(client: Deno.Conn): Promise<void> {
    const reader = new ConnReader(client);
    const first = await reader.peek(1);
    if (first.length === 0) return;
    if (first[0] === 0x05) return await this.#socks(client, reader);
    await this.#http(client, reader);
  }

  async #socks(client: Deno.Conn, reader: ConnReader): Promise<void> {
    const target = await readSocksRequest(reader, client);
    if (!target) return;
    const opened = await this.#open(target.host, target.port);
    if (!opened.ok) {
      const code = opened.status === 403
        ? SOCKS_REPLY.notAllowed
        : opened.reason.includes("not found")
        ? SOCKS_REPLY.hostUnreachable
        : SOCKS_REPLY.refused;
      return await socksReply(client, code);
    }
    await socksReply(client, SOCKS_REPLY.succeeded);
    await this.#tunnel(target.host, target.port, opened, client, reader, "whole", true);
  }

  async #http(client: Deno.Conn, reader: ConnReader): Promise<void> {
    const head = await reader.until(HEAD_END, MAX_HEAD);
    if (!head) return await this.#answer(client, 400, "bad_request", "no complete request head");
    const lines = new TextDecoder().decode(head).split("\r\n");
    const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0]);
    if (!m) return await this.#answer(client, 400, "bad_request", "not an HTTP/1 request line");
    const [, method, target] = m;
    if (method === "CONNECT") {
      const authority = parseAuthority(target);
      if (!authority) {
        return await this.#answer(client, 400, "bad_request", "CONNECT needs host:port");
      }
      const opened = await this.#open(authority.host, authority.port);
      if (!opened.ok) return await this.#answer(client, opened.status, opened.rule, opened.reason);
      await writeAll(client, encoder.encode("HTTP/1.1 200 Connection established\r\n\r\n"));
      const { host, port } = authority;
      await this.#tunnel(host, port, opened, client, reader, "whole", true);
      return;
    }
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return await this.#answer(
        client,
        400,
        "bad_request",
        "a proxy request needs an absolute URL",
      );
    }
    if (url.protocol !== "http:") {
      return await this.#answer(
        client,
        400,
        "bad_request",
        "only http: URLs are proxied; use CONNECT",
      );
    }
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const port = url.port ? Number(url.port) : 80;
    const opened = await this.#open(host, port);
    if (!opened.ok) return await this.#answer(client, opened.status, opened.rule, opened.reason);
    const headers = lines.slice(1).filter((l) => {
      if (l === "") return false;
      const name = l.slice(0, l.indexOf(":")).trim().toLowerCase();
      return !HOP_HEADERS.has(name);
    });
    if (!headers.some((l) => /^host\s*:/i.test(l))) headers.unshift(`Host: ${url.host}`);
    const out = `${method} ${url.pathname}${url.search} HTTP/1.1\r\n${headers.join("\r\n")}\r\n` +
      "Connection: close\r\n\r\n";
    try {
      await writeAll(opened.upstream, encoder.encode(out));
    } catch {
      closeQuietly(opened.upstream);
      return;
    }
    await this.#tunnel(host, port, opened, client, reader, "response", false);
  }

  /** A refusal or failure a tool can show. */
  async #answer(client: Deno.Conn, status: number, rule: string, reason: string): Promise<void> {
    const text = status === 403 ? "Forbidden" : status === 502 ? "Bad Gateway" : "Bad Request";
    const body = encoder.encode(`${reason}\n`);
    const head = `HTTP/1.1 ${status} ${text}\r\nX-Sandbar-Egress-Rule: ${headerValue(rule)}\r\n` +
      `X-Sandbar-Egress-Reason: ${headerValue(reason)}\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    await writeAll(client, encoder.encode(head)).catch(() => {});
    await writeAll(client, body).catch(() => {});
  }

  /**
   * Copy both ways until both sides end (a half close is passed on), or until the upstream
   * ends for `response` (a plain HTTP request: its response is complete). With `checkSni`, the
   * client's first flight is read before anything of it goes on (the upstream's bytes flow
   * meanwhile, for protocols where the server speaks first): a TLS ClientHello must name the
   * host asked for, or both sides are closed (rule `sni`).
   */
  async #tunnel(
    host: string,
    port: number,
    opened: Extract<Opened, { ok: true }>,
    client: Deno.Conn,
    reader: ConnReader,
    until: "whole" | "response",
    checkSni: boolean,
  ): Promise<void> {
    const upstream = opened.upstream;
    const tunnel: Tunnel = {
      host,
      port,
      addresses: opened.addresses,
      client,
      upstream,
      others: [],
    };
    this.#tunnels.add(tunnel);
    try {
      // A host a secret is attached to is intercepted: its TLS is ours, nothing flows raw.
      const secrets = checkSni && this.#ca ? this.#rules.secretsFor(host, port) : [];
      const down = secrets.length > 0 ? null : copyThenCloseWrite(upstream, client);
      if (checkSni) {
        const hello = await peekClientHello(reader);
        const sni = hello.kind === "tls" ? hello.serverName : null;
        if (hello.kind === "malformed" || (sni !== null && !sameHost(sni, host))) {
          this.#record(host, port, { rule: "sni" }, 403, "egress_denied");
          return;
        }
        if (secrets.length > 0 && hello.kind !== "tls") {
          this.#record(host, port, { rule: "tls" }, 403, "egress_denied");
          return;
        }
      }
      this.#handshaken(client);
      const early = reader.rest();
      if (down === null) {
        const track = (conns: Deno.Conn[]) => tunnel.others.push(...conns);
        const { interceptTunnel } = await import("./tls_intercept.ts");
        return await interceptTunnel(
          this.#ca!,
          this.#rules.ca,
          host,
          client,
          early,
          upstream,
          secrets,
          track,
        );
      }
      if (early.length > 0) await writeAll(upstream, early);
      const up = copyThenCloseWrite(client, upstream);
      await (until === "response" ? down : Promise.all([up, down]));
    } catch {
      /* either side closed */
    } finally {
      this.#tunnels.delete(tunnel);
      closeQuietly(upstream);
      closeQuietly(client);
    }
  }

  /** Stop listening and close every connection. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const t of this.#tunnels) {
      for (const c of [t.client, t.upstream, ...t.others]) closeQuietly(c);
    }
    for (const c of this.#pending) closeQuietly(c);
    await this.#accepting;
    await Promise.allSettled([...this.#handlers]);
  }
}
