/**
 * The host's half of the relay protocol both providers speak (bubblewrap's and docker's): a Unix
 * socket, in a directory the sandbox sees read-only or not at all, that the relay's data
 * connections come back to; and {@linkcode RelayDials.dial}, which sends `open <nonce> <port>`
 * on the control connection and hands back the connection that then presents `data <nonce>`.
 * The nonce is random and travels only over the control connection, so code inside that
 * connects to the socket cannot take a connection meant for the relay; anything else on the
 * socket is closed at once. How the control connection is made is each provider's own (the
 * local relay connects with a one-time key, the docker relay is the engine's exec stream), and
 * so is reading its lines: each hands them to {@linkcode RelayDials.controlLine}.
 *
 * @module
 */

import { type Duplex, readUntil } from "./splice.ts";

const NEWLINE = new Uint8Array([10]);
/** How long a connection to the socket may take to say who it is. */
const HELLO_TIMEOUT_MS = 10_000;
/** How long the relay may take to open a data connection. */
const OPEN_TIMEOUT_MS = 15_000;

/** The control connection's writing side, as a provider has it. */
export interface ControlConnection {
  /** Write all of `bytes`. */
  write(bytes: Uint8Array): Promise<void>;
  /** Close it (the relay then ends). */
  close(): void;
}

/** What differs between the providers. */
export interface RelayDialsOptions {
  /** Let the process exit while the socket listens (docker: the sandbox outlives its creator). */
  unref?: boolean;
  /** The error of a dial while no relay is attached. */
  notAttached: string;
  /** Why every dial fails once writing to the control connection failed. */
  writeFailed: string;
  /**
   * A first line other than `data <nonce>`: a promise when the provider took the connection
   * (the local relay's `control <key>`), else undefined and the connection is closed.
   */
  hello?(
    verb: string,
    value: string,
    conn: Deno.UnixConn,
    rest: Uint8Array,
  ): Promise<void> | undefined;
}

interface Pending {
  resolve(conn: Duplex): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/** `bytes` random bytes in hex. */
export function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
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

function closeQuietly(conn: { close(): void } | null): void {
  try {
    conn?.close();
  } catch { /* closed */ }
}

/** The socket the relay's data connections come to, and the dials waiting for them. */
export class RelayDials {
  readonly #listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  readonly #options: RelayDialsOptions;
  readonly #pending = new Map<string, Pending>();
  #control: ControlConnection | null = null;
  #writes: Promise<void> = Promise.resolve();
  #closed = false;

  /** Listen on `path`. */
  constructor(path: string, options: RelayDialsOptions) {
    this.#options = options;
    this.#listener = Deno.listen({ transport: "unix", path });
    if (options.unref) this.#listener.unref();
    this.#accept().catch(() => {});
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
    const taken = verb === "data" ? undefined : this.#options.hello?.(verb, value, conn, line.rest);
    if (taken) return await taken;
    const pending = verb === "data" && value ? this.#pending.get(value) : undefined;
    if (!pending) return closeQuietly(conn);
    this.#pending.delete(value);
    clearTimeout(pending.timer);
    pending.resolve(withPrefix(conn, line.rest));
  }

  /** The relay is in: `control` carries the `open` lines from now on. */
  attach(control: ControlConnection): void {
    this.#control = control;
  }

  /** A line the relay sent on the control connection: `fail <nonce> <why>` fails that dial. */
  controlLine(line: string): void {
    const [verb, nonce, ...why] = line.split(" ");
    const pending = verb === "fail" ? this.#pending.get(nonce) : undefined;
    if (!pending) return;
    this.#pending.delete(nonce);
    clearTimeout(pending.timer);
    pending.reject(new Error(why.join(" ") || "the relay could not connect"));
  }

  /** The relay is gone: close its control connection and fail every dial waiting, with `why`. */
  lost(why: string): void {
    closeQuietly(this.#control);
    this.#control = null;
    for (const [nonce, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new Error(why));
      this.#pending.delete(nonce);
    }
  }

  /** A connection to `127.0.0.1:<port>` inside the sandbox. */
  dial(port: number): Promise<Duplex> {
    const control = this.#control;
    if (!control || this.#closed) return Promise.reject(new Error(this.#options.notAttached));
    const nonce = randomHex(16);
    const opened = new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(nonce);
        reject(new Error(`the relay did not connect to port ${port} in time`));
      }, OPEN_TIMEOUT_MS);
      this.#pending.set(nonce, { resolve, reject, timer });
    });
    const line = new TextEncoder().encode(`open ${nonce} ${port}\n`);
    this.#writes = this.#writes.then(() => control.write(line)).catch(() =>
      this.lost(this.#options.writeFailed)
    );
    return opened;
  }

  /** Whether a relay is attached and the socket open. */
  get alive(): boolean {
    return this.#control !== null && !this.#closed;
  }

  /** Stop listening and drop every connection. */
  close(): void {
    this.#closed = true;
    try {
      this.#listener.close();
    } catch { /* closed */ }
    this.lost("closed");
  }
}
