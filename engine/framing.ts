/**
 * Newline-delimited framing over byte streams, both directions. Reading fills one reused buffer
 * per read, finds `\n` with `indexOf` on the bytes, decodes each run of complete lines in one call,
 * and caps each logical line (not each chunk), so the cap does not depend on how the pipe split
 * the data. Writing joins the lines queued in one tick into one write, starts a write early once a
 * burst is long enough for the peer to begin on it, and awaits each write, which is where
 * backpressure from a slow reader holds the queue back.
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

/**
 * Reads this process's stdin to its end through a splitter. A pipe is read through `node:net`,
 * which polls it on the event loop's own thread; `Deno.stdin` reads on a blocking-pool thread, one
 * more thread and wake-up per read, which on two cores competes with the peer. Anything that is
 * not a pipe or socket (a file, `/dev/null`) is read through `Deno.stdin`.
 */
export async function readStdinLines(splitter: LineSplitter): Promise<void> {
  const { Socket } = await import("node:net");
  let socket: InstanceType<typeof Socket>;
  try {
    socket = new Socket({ fd: 0, readable: true, writable: false });
  } catch {
    return await readLines(Deno.stdin.readable, splitter);
  }
  await new Promise<void>((resolve) => {
    const done = () => {
      socket.removeAllListeners("data");
      splitter.end();
      resolve();
    };
    socket.on("data", (chunk: Uint8Array) => {
      // A plain view: `slice` on a Buffer would not copy what the splitter keeps.
      splitter.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    });
    socket.once("end", done);
    // A read error means the peer is gone, as the end does.
    socket.once("error", done);
  });
  socket.destroy();
}

const encoder = new TextEncoder();

/**
 * How many queued lines start a write at once instead of at the end of the tick. A peer that gets
 * the first lines of a burst early works on them while this side still produces the rest, so the
 * two processes overlap instead of taking turns (at 64 in flight, 16 measured about 15% faster than
 * one write per tick, and faster than 8 or 32).
 */
export const FLUSH_LINES = 16;

/**
 * A blocking output, such as `Deno.stdout`: a write returns once the bytes are in the pipe, so a
 * full pipe holds the writer back without a queue in memory.
 */
export interface SyncOutput {
  /** Writes some of `bytes`, blocking while the pipe is full; returns how many. */
  writeSync(bytes: Uint8Array): number;
}

/**
 * Writes lines to a byte stream. Lines queued in one tick go out in one write (sooner once
 * {@linkcode FLUSH_LINES} are waiting), one write at a time; while a write is pending, new lines
 * wait for it, and a full stream is awaited (`ready`) before the next write, which is where
 * backpressure from a slow reader holds the queue back.
 */
export class LineWriter {
  #writer: WritableStreamDefaultWriter<Uint8Array> | null = null;
  #sync: SyncOutput | null = null;
  #queue: string[] = [];
  /** Settles when the lines now in the queue have been written; made only when someone waits. */
  #queued: PromiseWithResolvers<void> | null = null;
  #writing = false;
  #drained: Promise<void> = Promise.resolve();
  #scheduled = false;
  #closed = false;
  #failure: Error | null = null;

  /**
   * Makes a writer over `output`; it holds a stream's lock until {@linkcode close}. A
   * {@linkcode SyncOutput} (the engine's own stdout) is written in place, which spares the thread
   * hop of an asynchronous stdout write per batch. `onFailure` hears of each batch a failed write
   * lost, with its number of lines.
   */
  constructor(
    output: WritableStream<Uint8Array> | SyncOutput,
    readonly onFailure?: (error: Error, lines: number) => void,
  ) {
    if (output instanceof WritableStream) this.#writer = output.getWriter();
    else this.#sync = output;
  }

  /** Whether the stream has been closed or has failed. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Queues `line` (which must not contain `\n`) without waiting for it to be written. Returns
   * false, and drops the line, when the writer is closed or has failed.
   */
  queue(line: string): boolean {
    if (this.#closed) return false;
    this.#queue.push(line);
    if (this.#writing) return true;
    if (this.#queue.length >= FLUSH_LINES) this.#start();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#flushSoon);
    }
    return true;
  }

  /**
   * Queues `line` (which must not contain `\n`). Resolves once the batch holding it has been
   * written; rejects if the stream failed (for a child's stdin: the engine is gone).
   */
  write(line: string): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new Error("the stream is closed"));
    // Made before queueing, because queueing may take the queue into a write at once.
    this.#queued ??= Promise.withResolvers<void>();
    const written = this.#queued.promise;
    this.queue(line);
    return written;
  }

  #flushSoon = (): void => {
    this.#scheduled = false;
    if (!this.#writing && this.#queue.length > 0) this.#start();
  };

  #start(): void {
    this.#writing = true;
    this.#drained = this.#flush();
  }

  async #flush(): Promise<void> {
    for (; this.#queue.length > 0 && !this.#failure;) {
      const lines = this.#queue;
      const waiting = this.#queued;
      this.#queue = [];
      this.#queued = null;
      try {
        const bytes = encoder.encode(lines.join("\n") + "\n");
        if (this.#sync) {
          for (let at = 0; at < bytes.length;) at += this.#sync.writeSync(bytes.subarray(at));
        } else {
          const writer = this.#writer!;
          // Waiting on `ready` only when the stream is full saves an event-loop turn per batch.
          if ((writer.desiredSize ?? 1) <= 0) await writer.ready;
          await writer.write(bytes);
        }
        waiting?.resolve();
      } catch (error) {
        this.#failure = error instanceof Error ? error : new Error(String(error));
        this.#closed = true;
        waiting?.reject(this.#failure);
        this.onFailure?.(this.#failure, lines.length);
        // Lines queued while the failed write was pending share its fate.
        if (this.#queue.length > 0) this.onFailure?.(this.#failure, this.#queue.length);
        (this.#queued as PromiseWithResolvers<void> | null)?.reject(this.#failure);
        this.#queued = null;
        this.#queue = [];
      }
    }
    this.#writing = false;
  }

  /** Closes the stream once what is queued has been written. Never throws. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#writing && this.#queue.length > 0) this.#start();
    await this.#drained;
    try {
      await this.#writer?.close();
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
