/**
 * Bounded output buffers. A process can print without end; the server never holds more than a
 * set number of bytes of it, drops the oldest first, and counts what it dropped so the caller
 * is told.
 *
 * - `TailBuffer` (from `shared/tail_buffer.ts`, which the engine shares): one stream's last N
 *   bytes, decoded once at the end (`shell`).
 * - {@linkcode HeadBuffer}: one stream's first N bytes (`git diff`, where the start matters).
 * - {@linkcode OutputLog}: both streams as decoded chunks with byte offsets, readable from an
 *   offset and followable while the process runs (`process_start`, `process_output`).
 *
 * @module
 */

import { concatBytes, decodeTail } from "../../shared/bytes.ts";

/** Which stream a chunk came from. */
export type StreamName = "stdout" | "stderr";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * The first `limit` bytes of one stream; the rest is counted and dropped.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { HeadBuffer } from "./output.ts";
 * const b = new HeadBuffer(4);
 * b.push(new TextEncoder().encode("abcdef"));
 * assert.equal(b.text(), "abcd");
 * assert.equal(b.dropped, 2);
 * ```
 */
export class HeadBuffer {
  readonly #limit: number;
  readonly #chunks: Uint8Array[] = [];
  #size = 0;
  /** Bytes dropped from the end. */
  dropped = 0;

  /** A buffer keeping at most `limit` bytes. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Add bytes; what does not fit is counted and dropped. */
  push(chunk: Uint8Array): void {
    const room = this.#limit - this.#size;
    const kept = chunk.subarray(0, Math.max(0, room));
    if (kept.byteLength > 0) this.#chunks.push(kept);
    this.#size += kept.byteLength;
    this.dropped += chunk.byteLength - kept.byteLength;
  }

  /** The kept bytes as text (a character cut at the end becomes U+FFFD). */
  text(): string {
    return decoder.decode(concatBytes(this.#chunks, this.#size));
  }
}

/** One chunk of an {@linkcode OutputLog}. */
export interface OutputChunk {
  /** The stream. */
  type: StreamName;
  /** Decoded text. */
  data: string;
  /** Position of the chunk's first byte, counting both streams since the start. */
  offset: number;
  /** Length in bytes of the output the chunk stands for. */
  bytes: number;
}

/** What {@linkcode OutputLog.read} answers. */
export interface OutputSlice {
  /** Chunks that end after the asked offset. */
  chunks: OutputChunk[];
  /** Oldest position still held. */
  startOffset: number;
  /** Position after the last byte so far. */
  nextOffset: number;
  /** Bytes between the asked offset and `startOffset` that are gone. */
  dropped: number;
}

/**
 * Both streams of a process as chunks with offsets, holding at most `limit` bytes.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { OutputLog } from "./output.ts";
 * const log = new OutputLog(1024);
 * log.append("stdout", "hi\n", 3);
 * const page = log.read(0);
 * assert.equal(page.nextOffset, 3);
 * ```
 */
export class OutputLog {
  readonly #limit: number;
  #chunks: OutputChunk[] = [];
  #held = 0;
  #start = 0;
  #end = 0;
  #closed = false;
  #changed = Promise.withResolvers<void>();

  /** A log keeping at most `limit` bytes. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Bytes produced so far. */
  get total(): number {
    return this.#end;
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** Bytes dropped so far. */
  get dropped(): number {
    return this.#start;
  }

  /** Whether the process's output has ended. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Add a decoded chunk that stood for `bytes` bytes of output. */
  append(type: StreamName, data: string, bytes: number): void {
    if (bytes === 0 && data === "") return;
    let chunk: OutputChunk = { type, data, offset: this.#end, bytes };
    this.#end += bytes;
    if (bytes > this.#limit) {
      const encoded = encoder.encode(data);
      const kept = decodeTail(encoded.subarray(Math.max(0, encoded.byteLength - this.#limit)));
      chunk = { type, data: kept, offset: this.#end - this.#limit, bytes: this.#limit };
    }
    this.#chunks.push(chunk);
    this.#held += chunk.bytes;
    while (this.#held > this.#limit && this.#chunks.length > 1) {
      const first = this.#chunks.shift()!;
      this.#held -= first.bytes;
    }
    this.#start = this.#chunks[0]?.offset ?? this.#end;
    this.#notify();
  }

  /** Mark the end of output; followers stop waiting. */
  close(): void {
    this.#closed = true;
    this.#notify();
  }

  #notify(): void {
    this.#changed.resolve();
    this.#changed = Promise.withResolvers<void>();
  }

  /** Chunks from `offset` on. */
  read(offset: number): OutputSlice {
    const chunks = this.#chunks.filter((c) => c.offset + c.bytes > offset);
    return {
      chunks,
      startOffset: this.#start,
      nextOffset: this.#end,
      dropped: Math.max(0, Math.min(this.#start, this.#end) - offset),
    };
  }

  /** Resolves when output past `offset` arrives, the log closes, or `signal` aborts. */
  async waitBeyond(offset: number, signal?: AbortSignal): Promise<void> {
    if (this.#end > offset || this.#closed || signal?.aborted) return;
    const aborted = Promise.withResolvers<void>();
    const onAbort = () => aborted.resolve();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await Promise.race([this.#changed.promise, aborted.promise]);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }
}
