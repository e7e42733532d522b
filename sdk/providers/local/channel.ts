/**
 * The host's end of the channel into a bubblewrap sandbox's network namespace.
 *
 * The supervisor listens on a Unix socket in a directory of its own that is mounted read-only
 * inside the sandbox (`/run/sandbar-channel`): nothing inside can rename, replace or symlink
 * the socket, and the host never dials a path the sandbox can write. The relay inside connects
 * out to it:
 *
 * 1. first, a control connection: `control <key>\n`, with a key the supervisor wrote for the
 *    relay alone (it reads and removes it before anything else runs). The key is good once:
 *    after the relay has connected, nobody else can become the control connection;
 * 2. for each connection the gateway needs, the supervisor sends `open <nonce> <port>\n` on the
 *    control connection; the relay connects to `127.0.0.1:<port>` inside and then opens a data
 *    connection to the socket with `data <nonce>\n` (or answers `fail <nonce> <why>\n`). The
 *    nonce is random and travels only over the control connection, so code inside that connects
 *    to the socket cannot take a connection meant for the relay.
 *
 * Anything else on the socket is closed at once.
 *
 * @module
 */

import { BRIDGE_PORT } from "../../../server/egress/bridge.ts";
import { tokensEqual } from "../../../shared/tokens_equal.ts";
import { type Duplex, readUntil, writeAll } from "./splice.ts";

/** The channel socket's name in its directory. */
export const CHANNEL_SOCKET = "relay.sock";
/** The relay's one-time key, in the sandbox's run directory. */
export const RELAY_KEY_FILE = "relay_key";
/** The egress proxy's socket in the channel directory (the sandbox's only way out). */
export const EGRESS_SOCKET = "egress.sock";
/** The port of the egress bridge on 127.0.0.1 inside the sandbox (its proxy variables). */
export const EGRESS_BRIDGE_PORT = BRIDGE_PORT;
/**
 * The directory (in the sandbox's directory on the host) of its egress CA's certificate
 * (`ca.pem`) and the system bundle with it (`bundle.pem`), bound read-only at
 * {@linkcode EGRESS_CA_INSIDE}.
 */
export const EGRESS_CA_DIR = "egress-ca";
/** Where the egress CA directory is inside the sandbox. */
export const EGRESS_CA_INSIDE = "/opt/sandbar/egress-ca";

const NEWLINE = new Uint8Array([10]);
/** How long a connection to the socket may take to say who it is. */
const HELLO_TIMEOUT_MS = 10_000;
/** How long the relay may take to open a data connection. */
const OPEN_TIMEOUT_MS = 15_000;

interface Pending {
  resolve(conn: Duplex): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

/** A fresh key for the relay's control connection. */
export function newRelayKey(): string {
  return randomHex(32);
}

/** A connection whose first bytes were already read (they are returned first). */
function withPrefix(conn: Deno.UnixConn, prefix: Uint8Array): Duplex {
  let head: Uint8Array | null = prefix.length > 0 ? prefix : null;
  return {
    read(p) {
      if (!head) return conn.read(p);
      const n = Math.min(p.length, head.length);
      p.set(head.subarray(0, n));
      head = n < head.length ? head.subarray(n) : null;
      return Promise.resolve(n);
    },
    write: (p) => conn.write(p),
    close: () => conn.close(),
  };
}

/** The supervisor's side of the channel. */
export class RelayChannel {
  readonly #listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  #key: string | null;
  #control: Deno.UnixConn | null = null;
  #writes: Promise<void> = Promise.resolve();
  readonly #pending = new Map<string, Pending>();
  readonly #ready = Promise.withResolvers<void>();
  #closed = false;

  /** Listen on `path` for a relay that will present `key`. */
  constructor(path: string, key: string) {
    this.#key = key;
    this.#listener = Deno.listen({ transport: "unix", path });
    this.#ready.promise.catch(() => {});
    this.#accept().catch(() => {});
  }

  /** Resolves once the relay's control connection is in. */
  get ready(): Promise<void> {
    return this.#ready.promise;
  }

  async #accept(): Promise<void> {
    for await (const conn of this.#listener) {
      this.#hello(conn).catch(() => closeQuietly(conn));
    }
  }

  async #hello(conn: Deno.UnixConn): Promise<void> {
    const slow = setTimeout(() => closeQuietly(conn), HELLO_TIMEOUT_MS);
    const line = await readUntil(conn, NEWLINE, 256).catch(() => null);
    clearTimeout(slow);
    if (!line) return closeQuietly(conn);
    const [verb, value] = new TextDecoder().decode(line.head).split(" ");
    if (verb === "control" && this.#key !== null && value && tokensEqual(value, this.#key)) {
      this.#key = null;
      this.#control = conn;
      this.#ready.resolve();
      return await this.#readControl(conn, line.rest);
    }
    const pending = verb === "data" && value ? this.#pending.get(value) : undefined;
    if (!pending) return closeQuietly(conn);
    this.#pending.delete(value);
    clearTimeout(pending.timer);
    pending.resolve(withPrefix(conn, line.rest));
  }

  async #readControl(conn: Deno.UnixConn, first: Uint8Array): Promise<void> {
    let buffered = first;
    const buf = new Uint8Array(4096);
    try {
      while (true) {
        let at: number;
        while ((at = buffered.indexOf(10)) >= 0) {
          const [verb, nonce, ...why] = new TextDecoder().decode(buffered.subarray(0, at)).split(
            " ",
          );
          buffered = buffered.subarray(at + 1);
          const pending = verb === "fail" ? this.#pending.get(nonce) : undefined;
          if (pending) {
            this.#pending.delete(nonce);
            clearTimeout(pending.timer);
            pending.reject(new Error(why.join(" ") || "the relay could not connect"));
          }
        }
        if (buffered.length > 4096) break; // a line that long is not the relay's
        const n = await conn.read(buf);
        if (n === null) break;
        const next = new Uint8Array(buffered.length + n);
        next.set(buffered);
        next.set(buf.subarray(0, n), buffered.length);
        buffered = next;
      }
    } finally {
      this.#lost("the relay closed its channel");
    }
  }

  #lost(why: string): void {
    closeQuietly(this.#control);
    this.#control = null;
    this.#ready.reject(new Error(why));
    for (const [nonce, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new Error(why));
      this.#pending.delete(nonce);
    }
  }

  /** A connection to `127.0.0.1:<port>` inside the sandbox. */
  dial(port: number): Promise<Duplex> {
    const control = this.#control;
    if (!control || this.#closed) return Promise.reject(new Error("the relay is not connected"));
    const nonce = randomHex(16);
    const opened = new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(nonce);
        reject(new Error(`the relay did not connect to port ${port} in time`));
      }, OPEN_TIMEOUT_MS);
      this.#pending.set(nonce, { resolve, reject, timer });
    });
    const line = new TextEncoder().encode(`open ${nonce} ${port}\n`);
    this.#writes = this.#writes.then(() => writeAll(control, line)).catch(() =>
      this.#lost("the relay's channel failed")
    );
    return opened;
  }

  /** Stop listening and drop every connection. */
  close(): void {
    this.#closed = true;
    try {
      this.#listener.close();
    } catch { /* closed */ }
    this.#lost("closed");
  }
}

function closeQuietly(conn: Duplex | null): void {
  try {
    conn?.close();
  } catch { /* closed */ }
}
