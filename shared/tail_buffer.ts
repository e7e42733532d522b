/**
 * A bounded tail of a byte stream: the last N bytes of a process's output (the server's `shell`
 * and the agents' tools) or of an engine's stderr (the engine host quotes it in errors). The
 * oldest bytes go first and are counted, so the caller can say how much was dropped; a chatty
 * stream never fills memory.
 *
 * @module
 */

import { concatBytes, decodeTail } from "./bytes.ts";

const decoder = new TextDecoder();

/**
 * The last `limit` bytes of one stream.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { TailBuffer } from "./tail_buffer.ts";
 * const b = new TailBuffer(4);
 * b.push(new TextEncoder().encode("abcdef"));
 * assert.equal(b.text(), "cdef");
 * assert.equal(b.dropped, 2);
 * ```
 */
export class TailBuffer {
  readonly #limit: number;
  #chunks: Uint8Array[] = [];
  #size = 0;
  /** Bytes dropped from the front. */
  dropped = 0;

  /** A buffer keeping at most `limit` bytes. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Add bytes, dropping the oldest beyond the limit. */
  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    this.#chunks.push(chunk);
    this.#size += chunk.byteLength;
    while (this.#size > this.#limit) {
      const first = this.#chunks[0];
      const over = this.#size - this.#limit;
      if (first.byteLength <= over) {
        this.#chunks.shift();
        this.#size -= first.byteLength;
        this.dropped += first.byteLength;
      } else {
        this.#chunks[0] = first.subarray(over);
        this.#size -= over;
        this.dropped += over;
      }
    }
  }

  /** The kept bytes as text. */
  text(): string {
    const all = concatBytes(this.#chunks, this.#size);
    return this.dropped > 0 ? decodeTail(all) : decoder.decode(all);
  }
}
