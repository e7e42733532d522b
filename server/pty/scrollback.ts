/**
 * The bounded scrollback of a terminal: the most recent output, replayed to a client that
 * connects or reconnects.
 *
 * @module
 */

/**
 * A byte ring of fixed capacity that keeps the last `capacity` bytes written to it.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { Scrollback } from "./scrollback.ts";
 * const s = new Scrollback(4);
 * s.push(new TextEncoder().encode("abcdef"));
 * assert.equal(new TextDecoder().decode(s.snapshot()), "cdef"); // the last 4 bytes
 * ```
 */
export class Scrollback {
  readonly #ring: Uint8Array;
  #end = 0; // next write position
  #size = 0;

  /** A scrollback keeping at most `capacity` bytes. */
  constructor(capacity: number) {
    this.#ring = new Uint8Array(capacity);
  }

  /** Bytes held now. */
  get size(): number {
    return this.#size;
  }

  /** Append output, dropping the oldest bytes beyond the capacity. */
  push(bytes: Uint8Array): void {
    const cap = this.#ring.length;
    if (bytes.length >= cap) {
      this.#ring.set(bytes.subarray(bytes.length - cap));
      this.#end = 0;
      this.#size = cap;
      return;
    }
    const first = Math.min(bytes.length, cap - this.#end);
    this.#ring.set(bytes.subarray(0, first), this.#end);
    this.#ring.set(bytes.subarray(first), 0);
    this.#end = (this.#end + bytes.length) % cap;
    this.#size = Math.min(cap, this.#size + bytes.length);
  }

  /** A copy of the bytes held, oldest first. */
  snapshot(): Uint8Array {
    const cap = this.#ring.length;
    const start = (this.#end - this.#size + cap) % cap;
    if (start + this.#size <= cap) return this.#ring.slice(start, start + this.#size);
    const out = new Uint8Array(this.#size);
    out.set(this.#ring.subarray(start));
    out.set(this.#ring.subarray(0, this.#end), cap - start);
    return out;
  }
}
