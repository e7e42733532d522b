/**
 * Newline-delimited framing over byte streams, both directions. Reading keeps a list of chunks and
 * scans only new bytes for `\n`, so a long line costs linear time, and it caps each logical line
 * (not each chunk) so the cap does not depend on how the pipe split the data. Writing joins every
 * line queued in one tick into one write and awaits each write, which is where backpressure from a
 * slow reader reaches the caller.
 *
 * @module
 */

/** Where a {@linkcode LineSplitter} delivers what it finds. */
export interface LineSink {
  /** A complete line, without its `\n` (a trailing `\r` is stripped too). */
  line(text: string): void;
  /** A line longer than the cap, dropped; `head` is its first bytes, `bytes` its full length. */
  overlong(head: string, bytes: number): void;
  /** Bytes left without a closing `\n` when the stream ended. */
  partial(head: string, bytes: number): void;
}

const NEWLINE = 10;
const HEAD_BYTES = 200;
const decoder = new TextDecoder();

/** Splits a byte stream into lines no longer than `maxLineBytes`. */
export class LineSplitter {
  #parts: Uint8Array[] = [];
  #size = 0;
  #discarding = false;
  #head = "";

  /** Makes a splitter that delivers to `sink`. */
  constructor(readonly maxLineBytes: number, readonly sink: LineSink) {}

  /** Feeds one chunk; delivers every line it completes. */
  push(chunk: Uint8Array): void {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) {
        if (start < chunk.length) this.#append(chunk.subarray(start));
        return;
      }
      this.#append(chunk.subarray(start, end));
      this.#emit();
      start = end + 1;
    }
  }

  /** Reports whatever is left once the stream has ended. */
  end(): void {
    if (this.#size === 0) return;
    const head = this.#discarding
      ? this.#head
      : decoder.decode(this.#joined()).slice(0, HEAD_BYTES);
    this.sink.partial(head, this.#size);
    this.#reset();
  }

  #append(bytes: Uint8Array): void {
    this.#size += bytes.length;
    if (this.#discarding) return;
    this.#parts.push(bytes);
    if (this.#size > this.maxLineBytes) {
      this.#head = decoder.decode(this.#joined().subarray(0, HEAD_BYTES));
      this.#parts = [];
      this.#discarding = true;
    }
  }

  #emit(): void {
    if (this.#discarding) {
      this.sink.overlong(this.#head, this.#size);
    } else {
      const text = decoder.decode(this.#joined());
      this.sink.line(text.endsWith("\r") ? text.slice(0, -1) : text);
    }
    this.#reset();
  }

  #joined(): Uint8Array {
    if (this.#parts.length === 1) return this.#parts[0];
    const all = new Uint8Array(this.#parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of this.#parts) {
      all.set(part, at);
      at += part.length;
    }
    this.#parts = [all];
    return all;
  }

  #reset(): void {
    this.#parts = [];
    this.#size = 0;
    this.#discarding = false;
    this.#head = "";
  }
}

/** Reads `stream` to its end through a splitter. Resolves when the stream ends or fails. */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  splitter: LineSplitter,
): Promise<void> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      splitter.push(value);
    }
  } catch {
    // A read error means the peer is gone, which the caller learns from the resolution.
  } finally {
    splitter.end();
    reader.releaseLock();
  }
}

const encoder = new TextEncoder();

/** Writes lines to a byte stream, one write per batch, one batch at a time. */
export class LineWriter {
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #queue: string[] = [];
  #batch: PromiseWithResolvers<void> | null = null;
  #flushing: Promise<void> | null = null;
  #closed = false;
  #failure: Error | null = null;

  /** Makes a writer over `stream`; it holds the stream's lock until {@linkcode close}. */
  constructor(stream: WritableStream<Uint8Array>) {
    this.#writer = stream.getWriter();
  }

  /** Whether the stream has been closed or has failed. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Queues `line` (which must not contain `\n`). Resolves once the batch holding it has been
   * written; rejects if the stream failed (for a child's stdin: the engine is gone).
   */
  write(line: string): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new Error("stdin is closed"));
    this.#queue.push(line + "\n");
    this.#batch ??= Promise.withResolvers<void>();
    const promise = this.#batch.promise;
    // Deferred by a microtask so that every line written in this tick goes in the same write.
    this.#flushing ??= Promise.resolve().then(() => this.#flush());
    return promise;
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const text = this.#queue.length === 1 ? this.#queue[0] : this.#queue.join("");
      const batch = this.#batch!;
      this.#queue = [];
      this.#batch = null;
      try {
        // Waiting on `ready` only when the stream is full saves an event-loop turn per batch.
        if ((this.#writer.desiredSize ?? 1) <= 0) await this.#writer.ready;
        await this.#writer.write(encoder.encode(text));
        batch.resolve();
      } catch (error) {
        this.#failure = error instanceof Error ? error : new Error(String(error));
        this.#closed = true;
        batch.reject(this.#failure);
        // Lines queued while the failed write was pending share its fate.
        const queued = this.#batch as PromiseWithResolvers<void> | null;
        queued?.reject(this.#failure);
        this.#batch = null;
        this.#queue = [];
      }
    }
    this.#flushing = null;
  }

  /** Closes the stream once what is queued has been written. Never throws. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#flushing;
    try {
      await this.#writer.close();
    } catch {
      // Already broken: the engine closed its end first.
    }
  }
}

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
