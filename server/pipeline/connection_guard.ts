/**
 * A request-head timeout and a connection cap for `Deno.serve`, which has neither: a client
 * may open a connection and never send a request, and a few hundred such connections used to
 * exhaust the server's descriptors, at which point `Deno.serve`'s accept loop fails for good
 * (`EMFILE`) and the server stops answering.
 *
 * `Deno.serve` hides its connections, so they are found from below: a scan every
 * {@linkcode SCAN_EVERY_MS} lists the process's descriptors (`/proc/self/fd`), keeps the sockets
 * whose local port is one the server listens on and that have a peer (the accepted
 * connections), and matches each, by its peer address, with the requests the handler is
 * running (`ServeHandlerInfo.remoteAddr`). A connection with no request running is idle; one
 * idle for longer than `headTimeoutMs` (since it was first seen, or since its last answer
 * ended) is shut down (`shutdown(2)`, so `Deno.serve` sees the end of the stream and closes
 * its own descriptor). Above `maxConnections`, idle connections are shut down at once, the
 * longest idle first. A connection running a request, streaming an answer (its bytes still
 * flowing or queued) or upgraded to a WebSocket is never touched. The scan runs on the JavaScript thread, which is also the one `Deno.serve`
 * accepts and closes connections on, so a descriptor cannot change hands in the middle of it.
 *
 * At start the soft descriptor limit is raised towards the hard one, so a burst of connections
 * between two scans has room, and the cap is lowered to half of it if it was higher. Should
 * `Deno.serve`'s accept loop still fail (`serve.ts` listens again), every idle connection is
 * shut down at once.
 *
 * Linux only (elsewhere, and without FFI permission, the guard does nothing and says so).
 *
 * @module
 */

import { lazyLibc } from "../libc/lazy.ts";

/** How often connections are looked at. */
export const SCAN_EVERY_MS = 500;

/** Default of {@linkcode ConnectionGuardOptions.headTimeoutMs}. */
export const DEFAULT_HEAD_TIMEOUT_MS = 30_000;

/** Default of {@linkcode ConnectionGuardOptions.maxConnections}. */
export const DEFAULT_MAX_CONNECTIONS = 1024;

/** Options of {@linkcode ConnectionGuard}. */
export interface ConnectionGuardOptions {
  /**
   * How long a connection may stay without a request running: from when it is opened, or from
   * the end of its previous answer, to the end of the next request's head.
   */
  headTimeoutMs?: number;
  /** Most connections kept open at once; idle ones over it are closed at once. */
  maxConnections?: number;
}

const SYMBOLS = {
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  shutdown: { parameters: ["i32", "i32"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  ioctl: { parameters: ["i32", "u64", "buffer"], result: "i32" },
  getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
} as const;

type Sockets = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/**
 * Answers whose bytes flow without pause once the handler returned: one static body (JSON,
 * text), or a file's bytes. While they are sent the socket shows it (data sent lately, or bytes
 * queued), so their bodies are left alone; wrapping a download's body to see its end cost about
 * 8% of its throughput. Any other body (NDJSON, event streams) may pause for long and counts as
 * running until its last byte is taken.
 */
const FLOWING = /^(application\/(problem\+)?json|text\/plain|application\/octet-stream)\b/i;

const IPPROTO_TCP = 6;
const TCP_INFO = 11;
/** `struct tcp_info`'s `tcpi_last_data_sent`: milliseconds since data was last sent. */
const LAST_DATA_SENT_OFFSET = 44;
/** `SIOCOUTQ`: bytes not yet sent or not yet acknowledged. */
const SIOCOUTQ = 0x5411n;

const AF_INET = 2;
const AF_INET6 = 10;
const SHUT_RDWR = 2;
const RLIMIT_NOFILE = 7;

const load: () => Sockets | null = lazyLibc(SYMBOLS);

/**
 * An IP address in one spelling: IPv4 dotted, IPv6 as eight 4-digit groups, so that what the
 * kernel and what `Deno.serve` say of a peer compare equal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalIp } from "./connection_guard.ts";
 * assert.equal(canonicalIp("::1"), "0000:0000:0000:0000:0000:0000:0000:0001");
 * assert.equal(canonicalIp("127.0.0.1"), "127.0.0.1");
 * ```
 */
export function canonicalIp(ip: string): string {
  if (!ip.includes(":")) return ip;
  let text = ip.replace(/^\[|\]$/g, "").replace(/%.*$/, "").toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = text.slice(0, v4.index) +
      `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill("0");
  return [...left, ...fill, ...right].map((g) => g.padStart(4, "0")).join(":");
}

function hex4(v: DataView, off: number): string {
  return v.getUint16(off, false).toString(16).padStart(4, "0");
}

/** `ip` and port of a `sockaddr`, or null for another family. */
function parseAddress(buf: Uint8Array<ArrayBuffer>): { ip: string; port: number } | null {
  const v = new DataView(buf.buffer);
  const family = v.getUint16(0, true);
  const port = v.getUint16(2, false);
  if (family === AF_INET) return { ip: [...buf.subarray(4, 8)].join("."), port };
  if (family === AF_INET6) {
    const groups = Array.from({ length: 8 }, (_, i) => hex4(v, 8 + 2 * i));
    // A v4-mapped peer is what Deno reports as plain IPv4.
    if (groups.slice(0, 5).every((g) => g === "0000") && groups[5] === "ffff") {
      return { ip: [...buf.subarray(20, 24)].join("."), port };
    }
    return { ip: groups.join(":"), port };
  }
  return null;
}

/** What is known of one connection. */
interface Connection {
  /** Requests running on it now. */
  running: number;
  /** When it last became idle (first seen, or its last answer ended). */
  idleSince: number;
  /** Upgraded to a WebSocket: never idle. */
  upgraded: boolean;
}

/**
 * The head timeout and connection cap of one server (its HTTP and PTY listeners).
 */
export class ConnectionGuard {
  /** See {@linkcode ConnectionGuardOptions.headTimeoutMs}. */
  readonly headTimeoutMs: number;
  /** The cap in force: the one asked, or half the descriptor limit when that is lower. */
  readonly maxConnections: number;
  readonly #lib: Sockets | null;
  readonly #ports = new Set<number>();
  readonly #connections = new Map<string, Connection>();
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #name = new Uint8Array(128);
  readonly #len = new Uint32Array(1);

  /** A guard; nothing is scanned before a port is given to {@linkcode watchPort}. */
  constructor(options: ConnectionGuardOptions = {}) {
    this.headTimeoutMs = options.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS;
    this.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    for (
      const [name, value] of [["headTimeoutMs", this.headTimeoutMs], [
        "maxConnections",
        this.maxConnections,
      ]] as const
    ) {
      if (!Number.isSafeInteger(value) || value <= 0) {
        throw new RangeError(`${name} must be a positive integer, not ${value}`);
      }
    }
    this.#lib = load();
    if (this.#lib) {
      // The cap must bite before descriptors run out: at most half of them for connections.
      const limit = raiseDescriptorLimit(this.#lib);
      if (limit !== null) {
        this.maxConnections = Math.max(1, Math.min(this.maxConnections, limit / 2));
      }
    }
  }

  /** Whether connections are really looked after here (Linux, FFI allowed). */
  get active(): boolean {
    return this.#lib !== null;
  }

  /** Look after the connections accepted on `port`. */
  watchPort(port: number): void {
    this.#ports.add(port);
    if (this.#lib && !this.#timer) {
      this.#timer = setInterval(() => this.scan(), Math.min(SCAN_EVERY_MS, this.headTimeoutMs));
      Deno.unrefTimer(this.#timer);
    }
  }

  #key(ip: string, port: number): string {
    return `${canonicalIp(ip)}|${port}`;
  }

  #entry(key: string): Connection {
    let c = this.#connections.get(key);
    if (!c) this.#connections.set(key, c = { running: 0, idleSince: Date.now(), upgraded: false });
    return c;
  }

  /**
   * The handler, counting the requests each connection is running until their answer ends. A
   * handler that answers synchronously is answered synchronously (no promise, no extra turn of
   * the event loop): the pipeline's fast path stays fast.
   */
  track<A extends Deno.Addr>(handler: Deno.ServeHandler<A>): Deno.ServeHandler<A> {
    if (!this.#lib) return handler;
    return (request, info) => {
      const addr = info.remoteAddr as Deno.Addr;
      if (addr.transport !== "tcp") return handler(request, info);
      const c = this.#entry(this.#key(addr.hostname, addr.port));
      c.running++;
      let answer: Response | Promise<Response>;
      try {
        answer = handler(request, info);
      } catch (e) {
        this.#ended(c);
        throw e;
      }
      if (!(answer instanceof Promise)) return this.#settled(answer, c);
      return answer.then((response) => this.#settled(response, c), (e) => {
        this.#ended(c);
        throw e;
      });
    };
  }

  /** A handler's answer, with the connection counted as running until its body is sent. */
  #settled(response: Response, c: Connection): Response {
    if (response.status === 101) {
      c.upgraded = true;
      return response;
    }
    // Looking at a static body would turn Deno's one-write body into a stream: the type is
    // asked first.
    if (FLOWING.test(response.headers.get("content-type") ?? "") || !response.body) {
      this.#ended(c);
      return response;
    }
    return new Response(this.#untilEnd(response.body, c), response);
  }

  #ended(c: Connection): void {
    c.running = Math.max(0, c.running - 1);
    if (c.running === 0) c.idleSince = Date.now();
  }

  /** The same bytes; the request counts as running until they are all sent or cancelled. */
  #untilEnd(body: ReadableStream<Uint8Array>, c: Connection): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      this.#ended(c);
    };
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const r = await reader.read();
          if (r.done) {
            end();
            controller.close();
          } else controller.enqueue(r.value);
        } catch (e) {
          end();
          controller.error(e);
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    }, { highWaterMark: 0 });
  }

  /** The peer of an accepted connection on a watched port, or null. */
  #peerOf(fd: number): string | null {
    const lib = this.#lib!;
    this.#len[0] = this.#name.length;
    if (lib.getsockname(fd, this.#name, new Uint8Array(this.#len.buffer)) !== 0) return null;
    const local = parseAddress(this.#name);
    if (!local || !this.#ports.has(local.port)) return null;
    this.#len[0] = this.#name.length;
    if (lib.getpeername(fd, this.#name, new Uint8Array(this.#len.buffer)) !== 0) return null;
    const peer = parseAddress(this.#name);
    return peer ? this.#key(peer.ip, peer.port) : null;
  }

  /**
   * How long the socket has been quiet on the sending side, in milliseconds: 0 while bytes are
   * queued (an answer the client is slow to take is still being answered).
   */
  #sendQuietMs(fd: number): number {
    const lib = this.#lib!;
    const queued = new Int32Array(1);
    if (lib.ioctl(fd, SIOCOUTQ, new Uint8Array(queued.buffer)) === 0 && queued[0] > 0) return 0;
    const info = new Uint8Array(256);
    const len = new Uint32Array([info.length]);
    if (lib.getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, new Uint8Array(len.buffer)) !== 0) {
      return Infinity;
    }
    return new DataView(info.buffer).getUint32(LAST_DATA_SENT_OFFSET, true);
  }

  /**
   * Look at every connection now; returns how many were shut down. With `everyIdle` (the
   * descriptors ran out), every idle connection goes, whatever its age.
   */
  scan(everyIdle = false): number {
    if (!this.#lib || this.#ports.size === 0) return 0;
    const now = Date.now();
    const open: { fd: number; key: string; c: Connection }[] = [];
    let fds: number[];
    try {
      fds = [...Deno.readDirSync("/proc/self/fd")].map((e) => Number(e.name));
    } catch {
      return 0;
    }
    const seen = new Set<string>();
    for (const fd of fds) {
      const key = this.#peerOf(fd);
      if (key === null) continue;
      seen.add(key);
      open.push({ fd, key, c: this.#entry(key) });
    }
    // Gone connections are forgotten (a new one may come from the same address later).
    for (const key of this.#connections.keys()) if (!seen.has(key)) this.#connections.delete(key);
    const idle = open.filter((o) => o.c.running === 0 && !o.c.upgraded)
      .map((o) => ({ ...o, quiet: Math.min(now - o.c.idleSince, this.#sendQuietMs(o.fd)) }))
      .filter((o) => o.quiet > 0)
      .sort((a, b) => b.quiet - a.quiet);
    let over = open.length - this.maxConnections;
    let shut = 0;
    for (const o of idle) {
      const expired = everyIdle || o.quiet >= this.headTimeoutMs;
      if (!expired && over <= 0) break;
      // Asked again right before: the descriptor must still be that connection.
      if (this.#peerOf(o.fd) !== o.key) continue;
      this.#lib.shutdown(o.fd, SHUT_RDWR);
      this.#connections.delete(o.key);
      over--;
      shut++;
    }
    return shut;
  }

  /** Stop scanning. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#ports.clear();
    this.#connections.clear();
  }
}

/** The soft descriptor limit the server raises itself to, when the hard one allows. */
export const DESCRIPTOR_LIMIT = 65_536n;

/**
 * Raise the soft descriptor limit towards the hard one (what an unprivileged process may do),
 * up to {@linkcode DESCRIPTOR_LIMIT}: far above the connection cap, not so high that programs
 * the server starts, which inherit it, slow down closing every possible descriptor.
 */
function raiseDescriptorLimit(lib: Sockets): number | null {
  const lim = new BigUint64Array(2);
  const bytes = new Uint8Array(lim.buffer);
  if (lib.getrlimit(RLIMIT_NOFILE, bytes) !== 0) return null;
  const target = lim[1] < DESCRIPTOR_LIMIT ? lim[1] : DESCRIPTOR_LIMIT;
  if (lim[0] < target) {
    const soft = lim[0];
    lim[0] = target;
    if (lib.setrlimit(RLIMIT_NOFILE, bytes) !== 0) lim[0] = soft;
  }
  return Number(lim[0]);
}
