/**
 * File watching as an NDJSON stream over `Deno.watchFs`, and the per-server registry of open
 * watchers, so every watcher is closed when its client goes away (the response stream is
 * cancelled, or the request's signal aborts) or when the server stops.
 *
 * @module
 */

import type { Service } from "../state.ts";

/** One change, as sent on the wire. */
export interface WatchEvent {
  /** What happened. */
  type: "create" | "modify" | "delete" | "rename";
  /** The path, as asked (under the watched path). */
  path: string;
  /** For a rename, the old path. */
  from?: string;
  /** When the server saw it, ISO 8601. */
  time: string;
}

/** Options of {@linkcode WatcherRegistry.open}. */
export interface WatchOptions {
  /** The real directory or file to watch. */
  real: string;
  /** The same, as the client named it; event paths are reported under it. */
  shown: string;
  /** Watch subdirectories too. */
  recursive: boolean;
  /** Leave out a path (by its shown and real forms), e.g. for `paths.deny`. */
  hide: (shown: string, real: string) => boolean;
  /** Aborts when the client goes away. */
  signal?: AbortSignal;
  /** Milliseconds between keepalive lines. */
  keepaliveMs?: number;
}

const encoder = new TextEncoder();

function line(value: unknown): Uint8Array {
  return encoder.encode(`${JSON.stringify(value)}\n`);
}

/**
 * The open watchers of one server.
 */
export class WatcherRegistry implements Service {
  readonly #open = new Set<() => void>();

  /** How many watchers are open now. */
  get size(): number {
    return this.#open.size;
  }

  /** Start watching; the returned NDJSON stream ends when the watcher is closed. */
  open(options: WatchOptions): ReadableStream<Uint8Array> {
    const watcher = Deno.watchFs(options.real, { recursive: options.recursive });
    const toShown = (p: string) =>
      p === options.real ? options.shown : options.shown + p.slice(options.real.length);
    const inside = (p: string) => p === options.real || p.startsWith(`${options.real}/`);
    let timer: ReturnType<typeof setInterval> | undefined;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.#open.delete(close);
      clearInterval(timer);
      options.signal?.removeEventListener("abort", close);
      try {
        watcher.close();
      } catch { /* already closed */ }
    };
    this.#open.add(close);
    options.signal?.addEventListener("abort", close);
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        controller.enqueue(
          line({ type: "start", path: options.shown, recursive: options.recursive }),
        );
        const send = (value: unknown) => {
          try {
            controller.enqueue(line(value));
          } catch {
            close();
          }
        };
        timer = setInterval(
          () => send({ type: "keepalive", time: new Date().toISOString() }),
          options.keepaliveMs ?? 15_000,
        );
        (async () => {
          try {
            for await (const e of watcher) {
              const time = new Date().toISOString();
              const paths = e.paths.filter(inside);
              const visible = paths.filter((p) => !options.hide(toShown(p), p));
              if (visible.length !== paths.length) continue;
              if (e.kind === "rename") {
                // inotify's halves come alone; the pair (old, new) is the rename.
                if (paths.length === 2) {
                  send({ type: "rename", path: toShown(paths[1]), from: toShown(paths[0]), time });
                }
                continue;
              }
              const type = e.kind === "create"
                ? "create"
                : e.kind === "remove"
                ? "delete"
                : e.kind === "modify"
                ? "modify"
                : undefined;
              if (!type) continue; // access, other
              for (const p of paths) send({ type, path: toShown(p), time });
            }
          } catch { /* the watcher failed or was closed */ }
          close();
          try {
            controller.close();
          } catch { /* cancelled */ }
        })();
      },
      cancel: close,
    });
  }

  /** Close every watcher (the server is stopping). */
  close(): void {
    for (const close of [...this.#open]) close();
  }
}
