/**
 * The port gateway of a local sandbox: a loopback-only HTTP listener on the host that forwards
 * each request to one port inside the sandbox, the way E2B's edge forwards
 * `{port}-{id}.{domain}`.
 *
 * Which port, first match wins:
 *
 * 1. the `Host` header `{port}-{sandboxId}.localhost[:gatewayPort]` (browsers and curl resolve
 *    `*.localhost` to loopback; this is what `network.getUrl(port)` gives);
 * 2. a path prefix `/_port/<port>` (removed before forwarding): a base URL such as
 *    `http://127.0.0.1:<gateway>/_port/9100` works in any client, Deno's `fetch` and
 *    `WebSocket` included, which do not resolve `*.localhost`;
 * 3. the header `X-Sandbar-Port: <port>`;
 * 4. the listener's default port (9000 for the HTTP listener, 9001 for the PTY one).
 *
 * In secure mode every request must carry one of two credentials, each checked in constant
 * time:
 *
 * - `X-Access-Token: <access token>` (what `network.getAccessHeaders()` gives users, and what
 *   `files.uploadUrl()` needs);
 * - `X-Sandbar-Gateway: <gateway token>`, a credential of the gateway alone that the SDK's own
 *   server clients send (`Sandbox.server`, `serverAt`, `run`), so they never send the access
 *   token.
 *
 * Neither reaches a program behind a port: both are removed before forwarding. The one
 * exception is `X-Access-Token` on the sandbox's own server (ports 9000 and 9001), which
 * accepts it as a files-only identity (an upload or download URL); it is passed there only
 * when the request carries no `Authorization` of its own. `X-Sandbar-Port` is always removed.
 * Each forwarded HTTP request gets `Connection: close`: one
 * request per connection, so a keep-alive connection can never carry a second request past
 * the checks. WebSocket upgrades are forwarded as they are and then spliced.
 *
 * Refusals are JSON like the server's flat error body: `{error, type, code}` with `code`
 * `unauthorized` (401), `sandbox_paused` (409), `port_unreachable` (502), `not_found` (404),
 * `invalid_request` (400).
 *
 * @module
 */

import { tokensEqual } from "../../../shared/tokens_equal.ts";
import { LINK_PARAM, linkValid } from "./port_link.ts";
import { type Duplex, readUntil, splice, writeAll } from "./splice.ts";

const HEAD_END = new TextEncoder().encode("\r\n\r\n");
const MAX_HEAD = 64 * 1024;
/** A client must send its request head within this many ms (a slow-loris defence). */
const HEAD_TIMEOUT_MS = 30_000;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A refusal the gateway answers with. */
export interface GatewayRefusal {
  /** HTTP status. */
  status: number;
  /** Machine code. */
  code: string;
  /** Message. */
  message: string;
}

/** Options of {@linkcode startGateway}. */
export interface GatewayOptions {
  /** The sandbox id, checked against the `Host` header's. */
  sandboxId: string;
  /** The port a request goes to when it names none. */
  defaultPort: number;
  /** The loopback port to listen on when it is free (a woken sandbox keeps its URLs); else any. */
  port?: number;
  /** The access token (`X-Access-Token`), or null (not secure: no credential needed). */
  accessToken: string | null;
  /** The gateway's own token (`X-Sandbar-Gateway`), accepted in place of the access token. */
  gatewayToken: string | null;
  /** Open a connection to a port inside the sandbox; throws with a message when it cannot. */
  dial(port: number): Promise<Duplex>;
  /** A refusal for every request while it returns one (for example while paused). */
  refuse(): GatewayRefusal | null;
  /** Let the process exit while the gateway listens (the docker provider's, in any SDK process). */
  unref?: boolean;
}

/** A running gateway. */
export interface Gateway {
  /** The loopback port it listens on. */
  port: number;
  /** Stop listening and close every connection. */
  close(): void;
}

interface Head {
  requestLine: string;
  headers: [string, string][];
}

/** Bytes to a string of the same code units (header bytes are opaque octets, not UTF-8). */
function octets(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return s;
}

function toOctets(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function parseHead(bytes: Uint8Array): Head | null {
  const text = octets(bytes);
  const lines = text.split("\r\n");
  const requestLine = lines.shift() ?? "";
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(requestLine)) return null;
  const headers: [string, string][] = [];
  for (const line of lines) {
    const colon = line.indexOf(":");
    // A name must be a token: this also refuses obsolete line folding (a leading space).
    if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) return null;
    headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  return { requestLine, headers };
}

function header(head: Head, name: string): string | undefined {
  return head.headers.find(([n]) => n.toLowerCase() === name)?.[1];
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  409: "Conflict",
  502: "Bad Gateway",
};

async function answer(conn: Duplex, refusal: GatewayRefusal): Promise<void> {
  const body = JSON.stringify({ error: refusal.message, type: "GatewayError", code: refusal.code });
  const bytes = new TextEncoder().encode(body);
  const head = `HTTP/1.1 ${refusal.status} ${REASONS[refusal.status] ?? "Error"}\r\n` +
    `content-type: application/json\r\ncontent-length: ${bytes.length}\r\n` +
    `connection: close\r\n\r\n`;
  await writeAll(conn, new TextEncoder().encode(head)).catch(() => {});
  await writeAll(conn, bytes).catch(() => {});
  conn.close();
}

interface Route {
  port: number;
  /** The request line to forward (the path prefix removed). */
  requestLine: string;
}

const REQUEST_LINE = /^([A-Z]+) (\S+) (HTTP\/1\.[01])$/;
const PREFIX = /^\/_port\/(\d{1,5})(\/.*|\?.*)?$/;

/** The port a request is for, or a refusal. */
function route(head: Head, options: GatewayOptions): Route | GatewayRefusal {
  const [, method, rawTarget, version] = REQUEST_LINE.exec(head.requestLine)!;
  let target = rawTarget;
  let host = header(head, "host") ?? "";
  // Absolute form (`GET http://3000-<id>.localhost/ HTTP/1.1`), as sent to an HTTP proxy, for
  // example by a Deno client made with `Deno.createHttpClient({ proxy })`.
  const absolute = /^http:\/\/([^/?#]+)([^#]*)$/i.exec(target);
  if (absolute) {
    host = absolute[1];
    target = absolute[2].startsWith("/") ? absolute[2] : `/${absolute[2]}`;
  }
  const byHost = /^(\d{1,5})-([a-z0-9]+)\./i.exec(host);
  const byPrefix = PREFIX.exec(target);
  let port = options.defaultPort;
  if (byHost) {
    if (byHost[2].toLowerCase() !== options.sandboxId) {
      return {
        status: 404,
        code: "not_found",
        message: `This gateway serves sandbox ${options.sandboxId}, not ${byHost[2]}`,
      };
    }
    port = Number(byHost[1]);
  } else if (byPrefix) {
    port = Number(byPrefix[1]);
    const rest = byPrefix[2] ?? "/";
    target = rest.startsWith("?") ? `/${rest}` : rest;
  } else {
    const named = header(head, "x-sandbar-port");
    if (named !== undefined) port = /^\d{1,5}$/.test(named) ? Number(named) : NaN;
  }
  if (!(port >= 1 && port <= 65535)) {
    return { status: 400, code: "invalid_request", message: "The port must be 1 to 65535" };
  }
  return { port, requestLine: `${method} ${target} ${version}` };
}

/** The sandbox's own server: it takes the access token as an identity of its own. */
const SERVER_PORTS = new Set([9000, 9001]);

/** The link a request carries: in its query (with the target without it) or in a cookie. */
function linkOf(head: Head, port: number): {
  inQuery?: string;
  inCookie?: string;
  target: string;
} {
  const [, , target] = REQUEST_LINE.exec(head.requestLine)!;
  const cookieName = `${LINK_PARAM}_${port}`;
  const inCookie = (header(head, "cookie") ?? "").split(";").map((c) => c.trim())
    .find((c) => c.startsWith(`${cookieName}=`))?.slice(cookieName.length + 1);
  const q = target.indexOf("?");
  if (q < 0) return { inCookie, target };
  const params = target.slice(q + 1).split("&");
  const mine = params.find((p) => p.startsWith(`${LINK_PARAM}=`));
  if (mine === undefined) return { inCookie, target };
  const rest = params.filter((p) => p !== mine).join("&");
  return {
    inQuery: decodeURIComponent(mine.slice(LINK_PARAM.length + 1)),
    inCookie,
    target: target.slice(0, q) + (rest ? `?${rest}` : ""),
  };
}

/** A valid link's answer: the same address without it, and a cookie for that port until expiry. */
async function redirectWithCookie(
  conn: Duplex,
  location: string,
  port: number,
  value: string,
): Promise<void> {
  const maxAge = Math.max(0, Number(value.split(".")[0]) - Math.floor(Date.now() / 1000));
  const head = `HTTP/1.1 302 Found\r\nlocation: ${location}\r\n` +
    `set-cookie: ${LINK_PARAM}_${port}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; ` +
    `SameSite=Lax\r\ncontent-length: 0\r\ncache-control: no-store\r\nconnection: close\r\n\r\n`;
  await writeAll(conn, new TextEncoder().encode(head)).catch(() => {});
  conn.close();
}

/** The Cookie header without the gateway's link cookies (never forwarded to the program). */
function withoutLinkCookies(value: string): string {
  return value.split(";").map((c) => c.trim())
    .filter((c) => c !== "" && !c.startsWith(`${LINK_PARAM}_`)).join("; ");
}

function rewrite(head: Head, routed: Route, upgrade: boolean): Uint8Array {
  const drop = new Set(["x-sandbar-port", "x-sandbar-gateway"]);
  if (!SERVER_PORTS.has(routed.port) || header(head, "authorization") !== undefined) {
    drop.add("x-access-token");
  }
  if (!upgrade) drop.add("connection").add("keep-alive");
  const lines = [routed.requestLine];
  for (const [name, value] of head.headers) {
    if (drop.has(name.toLowerCase())) continue;
    if (name.toLowerCase() === "cookie") {
      const kept = withoutLinkCookies(value);
      if (kept) lines.push(`${name}: ${kept}`);
      continue;
    }
    lines.push(`${name}: ${value}`);
  }
  if (!upgrade) lines.push("Connection: close");
  return toOctets(lines.join("\r\n") + "\r\n\r\n");
}

async function handle(conn: Deno.TcpConn, options: GatewayOptions): Promise<void> {
  const slow = setTimeout(() => conn.close(), HEAD_TIMEOUT_MS);
  const read = await readUntil(conn, HEAD_END, MAX_HEAD).catch(() => null);
  clearTimeout(slow);
  if (!read) {
    try {
      conn.close();
    } catch { /* closed by the timer */ }
    return;
  }
  const head = parseHead(read.head);
  if (!head) {
    return await answer(conn, {
      status: 400,
      code: "invalid_request",
      message: "Malformed HTTP request head",
    });
  }
  const routed = route(head, options);
  if (!("port" in routed)) return await answer(conn, routed);
  let viaLink = false;
  if (options.accessToken !== null) {
    const link = linkOf(head, routed.port);
    if (link.inQuery !== undefined) {
      if (!await linkValid(link.inQuery, options.accessToken, options.sandboxId, routed.port)) {
        return await answer(conn, {
          status: 401,
          code: "unauthorized",
          message: "This link has expired or is not for this port: ask for a new one " +
            "(sandbox.network.getSignedUrl(port))",
        });
      }
      return await redirectWithCookie(conn, link.target, routed.port, link.inQuery);
    }
    viaLink = link.inCookie !== undefined &&
      await linkValid(link.inCookie, options.accessToken, options.sandboxId, routed.port);
  }
  if (options.accessToken !== null && !viaLink) {
    // A missing header is never a match, even against an empty token.
    const access = header(head, "x-access-token");
    const gateway = header(head, "x-sandbar-gateway");
    const admitted = (access !== undefined && tokensEqual(access, options.accessToken)) ||
      (options.gatewayToken !== null && gateway !== undefined &&
        tokensEqual(gateway, options.gatewayToken));
    if (!admitted) {
      return await answer(conn, {
        status: 401,
        code: "unauthorized",
        message: "This sandbox is secure: send its access token as X-Access-Token " +
          "(sandbox.network.getAccessHeaders())",
      });
    }
  }
  const refusal = options.refuse();
  if (refusal) return await answer(conn, refusal);
  const upgrade = /(^|,)\s*upgrade\s*(,|$)/i.test(header(head, "connection") ?? "") &&
    header(head, "upgrade") !== undefined;
  let upstream: Duplex;
  try {
    upstream = await options.dial(routed.port);
  } catch (e) {
    return await answer(conn, {
      status: 502,
      code: "port_unreachable",
      message: `Sandbox ${options.sandboxId}: ${(e as Error).message}`,
    });
  }
  try {
    await writeAll(upstream, rewrite(head, routed, upgrade));
    if (read.rest.length > 0) await writeAll(upstream, read.rest);
  } catch {
    upstream.close();
    return conn.close();
  }
  await splice(conn, upstream, upgrade);
}

/**
 * Listen on `127.0.0.1` (a free port) and forward requests into the sandbox.
 *
 * @example
 * ```ts ignore
 * const gateway = startGateway({
 *   sandboxId: "abc", defaultPort: 9000, accessToken: null, gatewayToken: null,
 *   dial: (port) => Deno.connect({ hostname: "127.0.0.1", port }),
 *   refuse: () => null,
 * });
 * console.log(gateway.port);
 * ```
 */
export function startGateway(options: GatewayOptions): Gateway {
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname: "127.0.0.1", port: options.port ?? 0 });
  } catch (e) {
    if (!options.port || !(e instanceof Deno.errors.AddrInUse)) throw e;
    listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  }
  if (options.unref) listener.unref();
  const open = new Set<Deno.TcpConn>();
  (async () => {
    for await (const conn of listener) {
      open.add(conn);
      handle(conn, options).catch(() => {
        try {
          conn.close();
        } catch { /* closed */ }
      }).finally(() => open.delete(conn));
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close() {
      try {
        listener.close();
      } catch { /* closed */ }
      for (const c of open) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}
