/**
 * Buffered reads from a connection for the proxies' handshakes (SOCKS5, an HTTP request head,
 * a TLS ClientHello): exact byte counts, a peek, or up to a delimiter. What was read past the
 * handshake is handed on with {@linkcode ConnReader.rest}.
 *
 * @module
 */

import { concatBytes } from "../../shared/bytes.ts";

/** What a {@linkcode ConnReader} reads from: a connection. */
export interface ByteSource {
  /** Read into `p`; the count, or null at the end. */
  read(p: Uint8Array): Promise<number | null>;
}

/** A reader over one connection. */
export class ConnReader {
  #buf: Uint8Array = new Uint8Array(0);
  readonly #conn: ByteSource;

  /** Read from `conn`. */
  constructor(conn: ByteSource) {
    this.#conn = conn;
  }

  /** Read more; false at the end of the stream. */
  async #fill(): Promise<boolean> {
    const chunk = new Uint8Array(16 * 1024);
    const got = await this.#conn.read(chunk);
    if (got === null) return false;
    this.#buf = concatBytes([this.#buf, chunk.subarray(0, got)]);
    return true;
  }

  /** At least `n` bytes without consuming them, or fewer at the end of the stream. */
  async peek(n: number): Promise<Uint8Array> {
    while (this.#buf.length < n) if (!(await this.#fill())) break;
    return this.#buf.subarray(0, Math.min(n, this.#buf.length));
  }

  /** Exactly `n` bytes; throws when the stream ends first. */
  async take(n: number): Promise<Uint8Array> {
    const got = await this.peek(n);
    if (got.length < n) throw new Error("the connection closed during the handshake");
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }

  /**
   * The bytes up to and including `delimiter`, or null when the stream ends first or more than
   * `max` bytes come without it.
   */
  async until(delimiter: Uint8Array, max: number): Promise<Uint8Array | null> {
    let from = 0;
    for (;;) {
      const at = indexOf(this.#buf, delimiter, from);
      if (at >= 0) return this.take(at + delimiter.length);
      if (this.#buf.length > max) return null;
      from = Math.max(0, this.#buf.length - delimiter.length + 1);
      if (!(await this.#fill())) return null;
    }
  }

  /** Bytes read past the handshake (a client that did not wait for the reply). */
  rest(): Uint8Array {
    const out = this.#buf;
    this.#buf = new Uint8Array(0);
    return out;
  }
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
