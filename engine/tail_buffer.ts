/**
 * A bounded tail of a byte stream: what the host keeps of an engine's stderr to quote in errors.
 *
 * @module
 */

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Keeps the last `maxBytes` of a byte stream, so a chatty stderr can never fill memory. */
export class TailBuffer {
  #parts: Uint8Array[] = [];
  #size = 0;

  /** Makes a buffer that keeps at most `maxBytes`. */
  constructor(readonly maxBytes: number) {}

  /** Appends a chunk, dropping the oldest bytes past the cap. */
  push(chunk: Uint8Array): void {
    this.#parts.push(chunk);
    this.#size += chunk.length;
    while (this.#size - this.#parts[0].length >= this.maxBytes) {
      this.#size -= this.#parts.shift()!.length;
    }
  }

  /** The kept bytes as text, cut to `maxBytes`. */
  text(): string {
    const all = new Uint8Array(this.#size);
    let at = 0;
    for (const part of this.#parts) {
      all.set(part, at);
      at += part.length;
    }
    return decoder.decode(all.subarray(Math.max(0, this.#size - this.maxBytes)));
  }
}
