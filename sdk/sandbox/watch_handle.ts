/**
 * {@linkcode WatchHandle}: a directory watch that is already in place when you get it.
 *
 * `files.watch(path)` resolves only once the server has its watcher installed, so a change made
 * right after the `await` is seen (the race E2B users hit, e2b-dev/E2B#676). Events are queued
 * until read; `stop()` (or leaving a `for await`, or `await using`) closes the stream.
 *
 * @module
 */

import type { WatchEvent } from "../models/files.ts";

/** The part of the client's watch this handle drives. */
export type WatchSource = (options: {
  signal: AbortSignal;
  onReady: () => void;
}) => AsyncIterable<WatchEvent>;

/**
 * A running watch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * await sandbox.files.makeDir("/home/user/project");
 * await using watch = await sandbox.files.watch("/home/user/project");
 * await sandbox.files.write("/home/user/project/a.txt", "hi");
 * let seen = "";
 * for await (const event of watch) {
 *   seen = event.path;
 *   if (seen.endsWith("/a.txt")) break; // writes go through a temp file first
 * }
 * assert.equal(seen, "/home/user/project/a.txt");
 * ```
 */
export class WatchHandle implements AsyncIterable<WatchEvent>, AsyncDisposable {
  readonly #abort = new AbortController();
  readonly #queue: WatchEvent[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #error: unknown;

  private constructor() {}

  /** Start watching; resolves when the server's watcher is in place. */
  static async start(source: WatchSource): Promise<WatchHandle> {
    const handle = new WatchHandle();
    const ready = Promise.withResolvers<void>();
    (async () => {
      try {
        for await (
          const event of source({ signal: handle.#abort.signal, onReady: () => ready.resolve() })
        ) {
          handle.#queue.push(event);
          handle.#wake?.();
        }
      } catch (e) {
        handle.#error = e;
        ready.reject(e);
      } finally {
        handle.#ended = true;
        ready.resolve(); // a stream that ended before its start line: iteration ends at once
        handle.#wake?.();
      }
    })();
    await ready.promise;
    return handle;
  }

  /** Events as they come, until `stop()`. */
  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    try {
      while (true) {
        const next = this.#queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (this.#ended) {
          if (this.#error && !this.#abort.signal.aborted) throw this.#error;
          return;
        }
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      this.stop();
    }
  }

  /** Collect events until `count` of them, or `timeout` seconds (default 10), then stop. */
  async collect(count: number, timeout = 10): Promise<WatchEvent[]> {
    const events: WatchEvent[] = [];
    const timer = setTimeout(() => this.stop(), timeout * 1000);
    try {
      for await (const event of this) {
        events.push(event);
        if (events.length >= count) break;
      }
    } finally {
      clearTimeout(timer);
    }
    return events;
  }

  /** Stop watching and close the stream. */
  stop(): void {
    this.#abort.abort();
  }

  /** `await using` stops it. */
  [Symbol.asyncDispose](): Promise<void> {
    this.stop();
    return Promise.resolve();
  }
}
