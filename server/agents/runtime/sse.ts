/**
 * A session's events as Server-Sent Events: `id:`, `event:` and one `data:` line of JSON per
 * event (the official client reads the JSON and routes by its `type`; the `id:` line is what a
 * reconnecting reader sends back as `Last-Event-ID`). The headers go out at once, with a first
 * comment, because the client's timeout covers only the wait for headers; a `: keepalive`
 * comment follows every 15 seconds so proxies keep the connection.
 *
 * A reader that stops reading is cut off once 8 MiB wait for it, rather than growing the
 * server's memory: it can reconnect with `Last-Event-ID` and miss nothing.
 *
 * @module
 */

import { concatBytes } from "../../../shared/bytes.ts";

/** A live reader of a session's events (see `event_log.ts`). */
interface Subscriber {
  send(eventId: string, type: string, json: string, frame: Uint8Array): void;
}

/** Seconds of silence before a keep-alive comment. */
export const KEEPALIVE_MS = 15_000;

/** Bytes queued for one reader before it is cut off. */
export const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

const encoder = new TextEncoder();

/** One event in SSE form. */
export function sseFrame(eventId: string, type: string, json: string): Uint8Array {
  return encoder.encode(`id: ${eventId}\nevent: ${type}\ndata: ${json}\n\n`);
}

/** A stream being written to one reader. */
export interface SseWriter {
  /** Send one event (its frame when already made). */
  send(eventId: string, type: string, json: string, frame?: Uint8Array): void;
  /** End the stream (after what was sent). */
  close(): void;
  /** Whether it ended. */
  readonly closed: boolean;
}

/**
 * An SSE response and its writer. `onClose` runs once when the stream ends, whoever ended it.
 */
export function sseResponse(onClose: () => void): { response: Response; writer: SseWriter } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let timer: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const end = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    onClose();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(encoder.encode(": connected\n\n"));
      timer = setInterval(() => write(encoder.encode(": keepalive\n\n")), KEEPALIVE_MS);
    },
    cancel() {
      end();
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }));
  // Frames written in one synchronous run (the events of one commit) go out as one chunk, in
  // a microtask: one write to the socket and one read for the client instead of one per event,
  // and no wait (a microtask runs before any I/O).
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const flush = () => {
    if (pending.length === 0) return;
    const chunk = concatBytes(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    if (closed) return;
    try {
      controller.enqueue(chunk);
    } catch {
      end();
    }
  };
  const write = (bytes: Uint8Array) => {
    if (closed) return;
    if ((controller.desiredSize ?? 0) - pendingBytes < -MAX_QUEUED_BYTES) {
      writer.close();
      return;
    }
    if (pending.length === 0) queueMicrotask(flush);
    pending.push(bytes);
    pendingBytes += bytes.length;
  };
  const writer: SseWriter = {
    send(eventId, type, json, frame) {
      write(frame ?? sseFrame(eventId, type, json));
    },
    close() {
      if (closed) return;
      flush();
      try {
        controller.close();
      } catch { /* already gone */ }
      end();
    },
    get closed() {
      return closed;
    },
  };
  const response = new Response(stream, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
  return { response, writer };
}
