/**
 * File watching as an NDJSON stream over `Deno.watchFs`, and the per-server registry of open
 * watchers, so every watcher is closed when its client goes away (the response stream is
 * cancelled, or the request's signal aborts) or when the server stops.
 *
 * @module
 */

import { basename } from "node:path";
import { ApiError } from "../errors.ts";
import { isTempName } from "./atomic_write.ts";
import type { Service } from "../state.ts";
import { InotifyHub } from "./inotify.ts";
import { type TreeChange, TreeWatch } from "./tree_watch.ts";

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
  /** The real path's components must not be links (`paths.symlinks` is not `allow`). */
  noSymlinks?: boolean;
}

/** Where changes come from: the shared inotify instance, or `Deno.watchFs`. */
interface ChangeSource {
  /** Deliver changes until closed; resolves then (or when the watcher fails). */
  run(send: (change: TreeChange) => void): Promise<void>;
  close(): void;
}

/** The server's inotify instance, made once and shared by every tree watch. */
let hub: InotifyHub | null | undefined;

/** A recursive watch of a directory through the shared inotify instance; null for a file. */
async function treeSource(
  options: WatchOptions,
  hidden: (real: string) => boolean,
  deliver: (change: TreeChange) => void,
): Promise<ChangeSource | null> {
  const st = await Deno.lstat(options.real).catch(() => null);
  if (!st?.isDirectory) return null;
  hub ??= InotifyHub.create();
  if (!hub) {
    // Deno.watchFs would walk (and follow links) on the JavaScript thread; only elsewhere than
    // Linux (FSEvents, ReadDirectoryChangesW: no walk) is it a tree watch of its own.
    if (Deno.build.os !== "linux") return null;
    throw new ApiError(
      "invalid_arguments",
      "A recursive watch needs inotify through glibc here; watch with recursive=false",
      { param: "recursive" },
    );
  }
  const ended = Promise.withResolvers<void>();
  const watch = new TreeWatch(hub, {
    root: options.real,
    hide: hidden,
    noSymlinks: options.noSymlinks ?? true,
    onChange: (change) => deliver(change),
  });
  await watch.start();
  return {
    run: () => ended.promise,
    close: () => {
      watch.close();
      ended.resolve();
    },
  };
}

/**
 * `Deno.watchFs`, for a file or a single directory (it adds one watch, no walk); also the
 * fallback for a tree where inotify cannot be used through FFI.
 */
function watchFsSource(
  real: string,
  recursive: boolean,
  inside: (p: string) => boolean,
  hidden: (p: string) => boolean,
): ChangeSource {
  const watcher = Deno.watchFs(real, { recursive });
  return {
    async run(send) {
      try {
        for await (const e of watcher) {
          const paths = e.paths.filter(inside);
          if (e.kind === "rename") {
            // inotify's halves come alone; the pair (old, new) is the rename. As in a tree
            // watch, a move from a hidden name (an upload's temp file) is a create, and one to
            // a hidden name a delete.
            if (paths.length !== 2) continue;
            const [from, to] = paths;
            if (!hidden(from) && !hidden(to)) send({ type: "rename", path: to, from });
            else if (!hidden(to)) send({ type: "create", path: to });
            else if (!hidden(from)) send({ type: "delete", path: from });
            continue;
          }
          if (paths.some(hidden)) continue;
          const type = e.kind === "create"
            ? "create"
            : e.kind === "remove"
            ? "delete"
            : e.kind === "modify"
            ? "modify"
            : undefined;
          if (!type) continue; // access, other
          for (const p of paths) send({ type, path: p });
        }
      } catch { /* the watcher failed or was closed */ }
    },
    close() {
      try {
        watcher.close();
      } catch { /* already closed */ }
    },
  };
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

  /**
   * Start watching; the returned NDJSON stream ends when the watcher is closed. A recursive
   * watch of a directory is in place (every directory of the tree watched) when this resolves;
   * a tree too large to watch is an `ApiError`.
   */
  async open(options: WatchOptions): Promise<ReadableStream<Uint8Array>> {
    const toShown = (p: string) =>
      p === options.real ? options.shown : options.shown + p.slice(options.real.length);
    const inside = (p: string) => p === options.real || p.startsWith(`${options.real}/`);
    // An atomic write's temp file is a step of the write, not a file of the user's: only the
    // file it becomes is reported (its rename or link into place reads as a create).
    const hidden = (p: string) => isTempName(basename(p)) || options.hide(toShown(p), p);
    let timer: ReturnType<typeof setInterval> | undefined;
    let closed = false;
    let pending: ((change: TreeChange) => void) | undefined;
    const tree = options.recursive ? await treeSource(options, hidden, (c) => pending?.(c)) : null;
    const source = tree ?? watchFsSource(options.real, options.recursive, inside, hidden);
    const close = () => {
      if (closed) return;
      closed = true;
      this.#open.delete(close);
      clearInterval(timer);
      options.signal?.removeEventListener("abort", close);
      source.close();
    };
    this.#open.add(close);
    options.signal?.addEventListener("abort", close);
    if (options.signal?.aborted) close();
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
        pending = (change) => {
          const time = new Date().toISOString();
          if (change.type === "rename") {
            send({ type: "rename", path: toShown(change.path), from: toShown(change.from), time });
          } else send({ type: change.type, path: toShown(change.path), time });
        };
        source.run(pending).then(() => {
          close();
          try {
            controller.close();
          } catch { /* cancelled */ }
        });
      },
      cancel: close,
    });
  }

  /** Close every watcher (the server is stopping). */
  close(): void {
    for (const close of [...this.#open]) close();
  }
}
