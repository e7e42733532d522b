/**
 * `client.files`: the file_ops group (`docs/server/file_ops.md`).
 *
 * Binary-safe by construction: `download` gives bytes, `readText` text (explicitly UTF-8);
 * `uploadFile` and `downloadFile` stream between the local disk and the server without holding
 * the file in memory, and `downloadFile` writes atomically (temp file, then rename).
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { ServerNotFoundError } from "../errors/mod.ts";
import type {
  DownloadResult,
  FileInfo,
  MkdirResult,
  MoveResult,
  SearchResult,
  WatchEvent,
} from "../models/files.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";
import { camelize, toDate } from "./wire.ts";
import type { FileInfo as ServerFileInfo } from "../../server/files/info.ts";
import { requireDeno } from "../errors/deno_only.ts";

/** What `files.upload` accepts as content. */
export type UploadData = string | Uint8Array | Blob | ReadableStream<Uint8Array>;

/** Options of uploads. */
export interface UploadOptions extends CallOptions {
  /** Replace an existing file (default true); false gives `ConflictError` (`file_exists`). */
  overwrite?: boolean;
}

/** A byte range of `download`: `start` to `end` inclusive (as HTTP `Range`). */
export interface ByteRange {
  /** First byte (0-based). */
  start: number;
  /** Last byte, inclusive; default the end of the file. */
  end?: number;
}

/** Options of downloads. */
export interface DownloadOptions extends CallOptions {
  /** Only these bytes. */
  range?: ByteRange;
}

/** Options of `files.search`. */
export interface SearchOptions extends CallOptions {
  /** A glob over names (`*.ts`, `src/**\/*.ts`). */
  pattern?: string;
  /** Text (or, with `regex`, a regular expression) to find in files. */
  content?: string;
  /** `content` is a JavaScript regular expression. */
  regex?: boolean;
  /** Match case (default true). */
  caseSensitive?: boolean;
  /** At most this many matches (default 1000). */
  maxResults?: number;
  /** At most this deep (default 32). */
  maxDepth?: number;
  /** Stop after this many milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Skip files larger than this for content search. */
  maxFileBytes?: number;
  /** Include dot files (default true). */
  includeHidden?: boolean;
}

/** Options of `files.watch`. */
export interface WatchOptions {
  /** Watch subdirectories too (default true). */
  recursive?: boolean;
  /** Stops the watch: the iteration then ends quietly and the connection is closed. */
  signal?: AbortSignal;
  /** Called once the server's watcher is in place: changes made after it are seen. */
  onReady?: () => unknown;
}

/** Options of `files.watchFor`. */
export interface WatchForOptions extends WatchOptions {
  /** Stop after this many events. */
  count?: number;
  /** Stop at the first event for which this is true (it is included). */
  until?: (event: WatchEvent) => boolean;
  /** Stop after this many seconds (default 10), returning what was seen. */
  timeout?: number;
}

/** The server's FileInfo, as sent (snake_case); the client hands out the camelCase one. */
type FileInfoWire = ServerFileInfo;

function toFileInfo(raw: FileInfoWire): FileInfo {
  return {
    name: raw.name,
    path: raw.path,
    type: raw.type,
    size: raw.size,
    mode: raw.mode,
    modified: toDate(raw.modified),
    symlink: raw.symlink === true,
    symlinkTarget: raw.symlink_target ?? null,
  };
}

function uploadBody(data: UploadData): BodyInit {
  return (typeof data === "string" ? new TextEncoder().encode(data) : data) as BodyInit;
}

function rangeHeader(range: ByteRange | undefined): HeadersInit | undefined {
  if (!range) return undefined;
  return { range: `bytes=${range.start}-${range.end ?? ""}` };
}

/**
 * The file_ops group: list, stat, exists, mkdir, delete, move, search, archive, watch and
 * watchFor, upload, download, readText, uploadFile, downloadFile, uploadLegacy,
 * downloadLegacy (plus `downloadStream`). Paths are absolute or relative to the server's root.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * await client.files.upload("notes/hello.txt", "hello");
 * assert.equal(await client.files.readText("notes/hello.txt"), "hello");
 * const names = (await client.files.list("notes")).map((f) => f.name);
 * assert.deepEqual(names, ["hello.txt"]);
 * ```
 */
export class FilesApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  /** The entries of a directory (`depth` 1 to 16, default 1), sorted by path. */
  async list(path: string, options: CallOptions & { depth?: number } = {}): Promise<FileInfo[]> {
    const { depth, ...call } = options;
    const body = await this.#t.json<{ entries: FileInfoWire[] }>("files_list", {
      ...callRequest(call),
      query: { path, depth },
    });
    return body.entries.map(toFileInfo);
  }

  /** Metadata of one path; `ServerNotFoundError` when it does not exist. */
  async stat(path: string, options: CallOptions = {}): Promise<FileInfo> {
    return toFileInfo(
      await this.#t.json<FileInfoWire>("files_stat", { ...callRequest(options), query: { path } }),
    );
  }

  /** Whether a path exists (a refused path still throws its policy error). */
  async exists(path: string, options: CallOptions = {}): Promise<boolean> {
    try {
      await this.stat(path, options);
      return true;
    } catch (e) {
      if (e instanceof ServerNotFoundError) return false;
      throw e;
    }
  }

  /** Create a directory, with its parents (default) and without error if it exists (default). */
  async mkdir(
    path: string,
    options: CallOptions & { parents?: boolean; existOk?: boolean } = {},
  ): Promise<MkdirResult> {
    const { parents, existOk, ...call } = options;
    return await this.#t.json<MkdirResult>("files_mkdir", {
      ...callRequest(call),
      json: { path, parents, exist_ok: existOk },
    });
  }

  /** Delete a file, or a directory (non-empty ones need `recursive: true`). */
  async delete(path: string, options: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    const { recursive, ...call } = options;
    await this.#t.json("files_delete", { ...callRequest(call), query: { path, recursive } });
  }

  /** Move or rename; `destination` is the new full path. */
  async move(
    source: string,
    destination: string,
    options: CallOptions & { overwrite?: boolean } = {},
  ): Promise<MoveResult> {
    const { overwrite, ...call } = options;
    return await this.#t.json<MoveResult>("files_move", {
      ...callRequest(call),
      json: { source, destination, overwrite },
    });
  }

  /** Search a directory by name glob (`pattern`) and/or content; bounded in results and time. */
  async search(path: string, options: SearchOptions): Promise<SearchResult> {
    const { signal, requestTimeout, ...query } = options;
    const json: Record<string, unknown> = { path };
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined) json[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
    }
    const raw = await this.#t.json<Record<string, unknown>>("files_search", {
      ...callRequest({ signal, requestTimeout }),
      json,
    });
    const result = camelize<SearchResult>(raw);
    result.matches = result.matches.map((m) => ({
      ...m,
      line: m.line ?? null,
      column: m.column ?? null,
      text: m.text ?? null,
    }));
    return result;
  }

  /**
   * A directory (or file) as a tar.gz stream. Read it to the end or cancel it: an unread
   * stream holds the connection.
   */
  async archive(path: string, options: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const { response, done } = await this.#t.open("files_archive", {
      ...callRequest(options),
      query: { path },
      stream: true,
    });
    return releaseOnEnd(response.body ?? new Blob([]).stream(), done);
  }

  /**
   * Changes under a path, as they happen, until the loop is left or `signal` aborts (the
   * connection is then closed and the server's watcher removed). Keepalives are not yielded.
   *
   * ```ts
   * import assert from "node:assert/strict";
   * import { Sandbox } from "@sandbar/sandbar";
   *
   * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
   * const client = sandbox.server; // the typed client of its in-sandbox server
   * await client.files.mkdir("src");
   * const ready = Promise.withResolvers<void>();
   * const first = (async () => {
   *   for await (const event of client.files.watch("src", { onReady: ready.resolve })) {
   *     if (event.path.endsWith("/a.txt")) return event; // writes go through a temp file first
   *   }
   * })();
   * await ready.promise; // the watcher is in place: this write is seen
   * await client.files.upload("src/a.txt", "a");
   * assert.match((await first)!.path, /src\/a\.txt$/);
   * ```
   */
  async *watch(path: string, options: WatchOptions = {}): AsyncGenerator<WatchEvent> {
    const { recursive, signal, onReady } = options;
    for await (const raw of this.#t.lines("files_watch", { signal, query: { path, recursive } })) {
      const line = raw as Record<string, unknown>;
      if (line.type === "start") {
        await onReady?.();
        continue;
      }
      if (line.type === "keepalive") continue;
      yield {
        type: line.type as WatchEvent["type"],
        path: String(line.path),
        from: typeof line.from === "string" ? line.from : null,
        time: toDate(line.time),
      };
    }
  }

  /**
   * The collecting twin of {@linkcode watch}: the events seen until `count` events, the first
   * event `until` accepts, or `timeout` seconds (default 10), whichever comes first.
   * Make the changes in `onReady` so none is missed.
   */
  async watchFor(path: string, options: WatchForOptions = {}): Promise<WatchEvent[]> {
    const { count, until, timeout = 10, signal, ...watch } = options;
    const stop = new AbortController();
    const timer = timeout > 0 ? setTimeout(() => stop.abort(), timeout * 1000) : undefined;
    const events: WatchEvent[] = [];
    try {
      const stopped = signal ? AbortSignal.any([stop.signal, signal]) : stop.signal;
      for await (const event of this.watch(path, { ...watch, signal: stopped })) {
        events.push(event);
        if ((count !== undefined && events.length >= count) || until?.(event)) break;
      }
    } finally {
      clearTimeout(timer);
    }
    return events;
  }

  /** Upload content to a file (created with its parents; replaced unless `overwrite: false`). */
  upload(path: string, data: UploadData, options: UploadOptions = {}): Promise<FileInfo> {
    return this.#upload(path, uploadBody(data), options, {});
  }

  async #upload(
    path: string,
    body: BodyInit,
    options: UploadOptions,
    headers: Record<string, string>,
  ): Promise<FileInfo> {
    const { overwrite, ...call } = options;
    const answer = await this.#t.json<{ files: FileInfoWire[] }>("files_upload", {
      // A streamed body has no end the client can time: no timeout unless one is given.
      ...callRequest(call),
      timeout: call.requestTimeout ?? (body instanceof ReadableStream ? 0 : undefined),
      query: { path, overwrite },
      headers: { "content-type": "application/octet-stream", ...headers },
      body,
    });
    return toFileInfo(answer.files[0]);
  }

  /** A file's bytes (or a `range` of them). */
  download(path: string, options: DownloadOptions = {}): Promise<Uint8Array> {
    return this.#bytes("files_download", path, options);
  }

  #bytes(endpoint: string, path: string, options: DownloadOptions): Promise<Uint8Array> {
    const { range, ...call } = options;
    return this.#t.bytes(endpoint, {
      ...callRequest(call),
      query: { path },
      headers: rangeHeader(range),
    });
  }

  /**
   * A file's bytes as a stream (or a `range` of them). Read it to the end or cancel it. The
   * client's timeout covers only the wait for the response headers.
   */
  async downloadStream(
    path: string,
    options: DownloadOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const { range, ...call } = options;
    const { response, done } = await this.#t.open("files_download", {
      ...callRequest(call),
      query: { path },
      headers: rangeHeader(range),
      stream: true,
    });
    return releaseOnEnd(response.body ?? new Blob([]).stream(), done);
  }

  /** A file's content decoded as UTF-8 text. Use {@linkcode download} for binary files. */
  async readText(path: string, options: CallOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.download(path, options));
  }

  /** Upload a local file, streamed from disk (never held in memory). */
  async uploadFile(
    localPath: string,
    remotePath: string,
    options: UploadOptions = {},
  ): Promise<FileInfo> {
    requireDeno("files.uploadFile (it reads a local file)");
    const file = await Deno.open(localPath, { read: true });
    try {
      const { size } = await file.stat();
      // The length lets the server refuse an oversized file before a byte is sent.
      return await this.#upload(remotePath, file.readable, options, {
        "content-length": String(size),
      });
    } finally {
      try {
        file.close();
      } catch { /* already closed by the stream */ }
    }
  }

  /**
   * Download a file to a local path, streamed to disk through a temp file in the same
   * directory, renamed over `localPath` only when complete: an interrupted download leaves the
   * old file (or none), never half a file.
   */
  async downloadFile(
    remotePath: string,
    localPath: string,
    options: DownloadOptions = {},
  ): Promise<DownloadResult> {
    requireDeno("files.downloadFile (it writes a local file)");
    const stream = await this.downloadStream(remotePath, options);
    const temp = join(
      dirname(localPath),
      `.${basename(localPath)}.sandbar-${crypto.randomUUID().slice(0, 8)}.tmp`,
    );
    let size = 0;
    try {
      const file = await Deno.open(temp, { write: true, createNew: true });
      await stream
        .pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              size += chunk.byteLength;
              controller.enqueue(chunk);
            },
          }),
        )
        .pipeTo(file.writable);
      await Deno.rename(temp, localPath);
    } catch (e) {
      await stream.cancel().catch(() => {});
      await Deno.remove(temp).catch(() => {});
      throw e;
    }
    return { path: localPath, size };
  }

  /**
   * Upload through the legacy `POST /upload` (multipart). `path` is the destination file, or a
   * directory (default the root) that receives the file under `filename`.
   */
  async uploadLegacy(
    data: UploadData,
    options: UploadOptions & { path?: string; filename?: string } = {},
  ): Promise<FileInfo[]> {
    const { path, filename = "upload.bin", overwrite, ...call } = options;
    const form = new FormData();
    const blob = data instanceof Blob
      ? data
      : data instanceof ReadableStream
      ? await new Response(data).blob() // FormData needs a Blob; legacy uploads are small
      : new Blob([typeof data === "string" ? data : data.slice()]);
    form.append("file", blob, filename);
    const body = await this.#t.json<{ files: FileInfoWire[] }>("files_upload_legacy", {
      ...callRequest(call),
      query: { path, overwrite },
      body: form,
    });
    return body.files.map(toFileInfo);
  }

  /** A file's bytes through the legacy `GET /download`. */
  downloadLegacy(path: string, options: DownloadOptions = {}): Promise<Uint8Array> {
    return this.#bytes("files_download_legacy", path, options);
  }
}

/** The stream, with `done` called when it ends, errors or is cancelled. */
function releaseOnEnd(
  stream: ReadableStream<Uint8Array>,
  done: () => void,
): ReadableStream<Uint8Array> {
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      flush() {
        done();
      },
      cancel() {
        done();
      },
    }),
  );
}
