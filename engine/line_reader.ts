/**
 * Reading newline-delimited messages from a byte stream. Reading fills one reused buffer per read,
 * finds `\n` with `indexOf` on the bytes, decodes each run of complete lines in one call, and caps
 * each logical line (not each chunk), so the cap does not depend on how the pipe split the data.
 * Both sides use it: the host on the engine's stdout, the engine on its stdin.
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
// BOMs are kept, so a line decodes the same whether it arrived alone or inside a larger chunk.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Splits a byte stream into lines no longer than `maxLineBytes`. The complete lines of a chunk are
 * found with `indexOf` on the bytes and decoded in one call, then split as text: `\n` never occurs
 * inside a multi-byte UTF-8 sequence, so the text's lines are exactly the bytes' lines.
 */
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
    let end = chunk.indexOf(NEWLINE);
    if (end !== -1 && this.#size > 0) {
      // The end of a line that began in an earlier chunk.
      this.#append(chunk.subarray(0, end));
      this.#emit();
      start = end + 1;
      end = chunk.indexOf(NEWLINE, start);
    }
    while (end !== -1) {
      if (end - start > this.maxLineBytes) {
        this.sink.overlong(decoder.decode(chunk.subarray(start, start + HEAD_BYTES)), end - start);
        start = end + 1;
        end = chunk.indexOf(NEWLINE, start);
        continue;
      }
      // The run of lines within the cap that starts here, up to the last newline of the run.
      const first = start;
      let last = end;
      start = end + 1;
      end = chunk.indexOf(NEWLINE, start);
      while (end !== -1 && end - start <= this.maxLineBytes) {
        last = end;
        start = end + 1;
        end = chunk.indexOf(NEWLINE, start);
      }
      const text = decoder.decode(chunk.subarray(first, last));
      for (const line of text.split("\n")) this.#line(line);
    }
    if (start < chunk.length) this.#append(chunk.subarray(start));
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

  #line(text: string): void {
    this.sink.line(text.endsWith("\r") ? text.slice(0, -1) : text);
  }

  #append(bytes: Uint8Array): void {
    this.#size += bytes.length;
    if (this.#discarding) return;
    // A copy: the reader fills the same buffer again.
    this.#parts.push(bytes.slice());
    if (this.#size > this.maxLineBytes) {
      this.#head = decoder.decode(this.#joined().subarray(0, HEAD_BYTES));
      this.#parts = [];
      this.#discarding = true;
    }
  }

  #emit(): void {
    if (this.#discarding) this.sink.overlong(this.#head, this.#size);
    else this.#line(decoder.decode(this.#joined()));
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

/** The buffer each read fills: the most a default pipe holds. */
const READ_BYTES = 64 * 1024;

/**
 * Reads `stream` to its end through a splitter. Resolves when the stream ends or fails. A byte
 * stream (a pipe) is read into one reused buffer, so reading allocates nothing per chunk; the
 * splitter copies the little it keeps across reads.
 */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  splitter: LineSplitter,
): Promise<void> {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream: read its chunks as they come.
  }
  const reader = byob ?? stream.getReader();
  try {
    let buffer = new ArrayBuffer(READ_BYTES);
    for (;;) {
      const { done, value } = byob
        ? await byob.read(new Uint8Array(buffer))
        : await (reader as ReadableStreamDefaultReader<Uint8Array>).read();
      if (done) break;
      splitter.push(value);
      if (byob) buffer = value.buffer as ArrayBuffer;
    }
  } catch {
    // A read error means the peer is gone, which the caller learns from the resolution.
  } finally {
    splitter.end();
    reader.releaseLock();
  }
}
