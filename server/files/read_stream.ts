/**
 * A file's bytes as a response body. Deno.serve sends a file's own `readable` from Rust, but in
 * 64 KiB steps without reading ahead: about 1.1 GB/s on loopback, a third of what the page cache
 * gives. Half-MiB chunks, with the next one already being read while the last is sent, gave
 * 2.5-4 GB/s to curl on the same machine; 256 KiB and 1 MiB chunks were both slower (see
 * `scripts/bench/files.ts`).
 *
 * @module
 */

/** Bytes per read: measured best between 256 KiB and 2 MiB. */
export const READ_CHUNK_BYTES = 512 * 1024;

/**
 * `count` bytes of an open file from its current position (to its end when `count` is
 * undefined), one chunk read ahead. The file is closed at the end, when the reader cancels, and
 * when a read fails. A file cut short while it is read ends the stream early: the client then
 * sees fewer bytes than the `content-length` announced.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileReadStream } from "./read_stream.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "hello");
 * assert.equal(await new Response(fileReadStream(await Deno.open(path))).text(), "hello");
 * await Deno.remove(path);
 * ```
 */
export function fileReadStream(file: Deno.FsFile, count?: number): ReadableStream<Uint8Array> {
  let left = count ?? Infinity;
  let closed = false;
  let next: Promise<Uint8Array | null> | null = null;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
  };
  const readChunk = async (): Promise<Uint8Array | null> => {
    if (left <= 0) return null;
    const buf = new Uint8Array(Math.min(READ_CHUNK_BYTES, left));
    const n = await file.read(buf);
    if (n === null) return null;
    left -= n;
    return n === buf.length ? buf : buf.subarray(0, n);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Uint8Array | null;
      try {
        chunk = await (next ?? readChunk());
      } catch (e) {
        close();
        throw e;
      }
      if (chunk === null) {
        close();
        controller.close();
        return;
      }
      // The next read runs while this chunk is written to the socket.
      next = readChunk();
      // A failed read-ahead is seen by the next pull; it must not be an unhandled rejection.
      next.catch(() => {});
      controller.enqueue(chunk);
    },
    cancel() {
      // A read still in flight fails on the closed file; its rejection is already handled.
      close();
    },
  });
}
