/**
 * The engine side's transport: lines in from stdin, lines out on stdout. It knows nothing of
 * JSON-RPC; {@linkcode StdioTransport.listen} hands each line to a callback and
 * {@linkcode StdioTransport.send} queues one. Tests and embedders can give it streams instead of
 * the process's stdio.
 *
 * @module
 */
import { LineSplitter, readLines } from "./line_reader.ts";
import { LineWriter } from "./line_writer.ts";

/** Where the transport reads and writes, and its limits. */
export interface StdioTransportOptions {
  /** Lines come from here. Default: this process's stdin. */
  input?: ReadableStream<Uint8Array>;
  /** Lines go here. Default: this process's stdout, written synchronously. */
  output?: WritableStream<Uint8Array>;
  /** The longest incoming line accepted, in bytes. */
  maxLineBytes: number;
  /** Where framing problems and lost output are reported. */
  log: (message: string) => void;
}

/** Line-delimited messages over stdin and stdout (or the streams given instead). */
export class StdioTransport {
  readonly #options: StdioTransportOptions;
  readonly #writer: LineWriter;

  /** Makes a transport; it takes the output's lock until {@linkcode close}. */
  constructor(options: StdioTransportOptions) {
    this.#options = options;
    // `Deno.stdout` is a blocking output: written in place, without a thread hop per batch.
    this.#writer = new LineWriter(
      options.output ?? Deno.stdout,
      (_error, lines) => options.log(`stdout is closed; ${lines} message(s) dropped`),
    );
  }

  /** Queues one line (without `\n`); a line that can no longer be written is reported and dropped. */
  send(line: string): void {
    if (!this.#writer.queue(line)) this.#options.log("stdout is closed; message dropped");
  }

  /** Delivers each incoming line to `onLine`; resolves when the input ends. */
  async listen(onLine: (line: string) => void): Promise<void> {
    const log = this.#options.log;
    const splitter = new LineSplitter(this.#options.maxLineBytes, {
      line: onLine,
      overlong: (_head, bytes) => log(`skipped a line of ${bytes} bytes, over the limit`),
      partial: (_head, bytes) => log(`stdin ended inside a line of ${bytes} bytes`),
    });
    if (this.#options.input) await readLines(this.#options.input, splitter);
    else await readStdinLines(splitter);
  }

  /** Writes what is queued, then closes the output. Never throws. */
  close(): Promise<void> {
    return this.#writer.close();
  }
}

/**
 * Reads this process's stdin to its end through a splitter. A pipe is read through `node:net`,
 * which polls it on the event loop's own thread; `Deno.stdin` reads on a blocking-pool thread, one
 * more thread and wake-up per read, which on two cores competes with the peer. Anything that is
 * not a pipe or socket (a file, `/dev/null`) is read through `Deno.stdin`.
 */
async function readStdinLines(splitter: LineSplitter): Promise<void> {
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
