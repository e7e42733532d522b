/**
 * The `files` module: the sandbox's file system, through the in-sandbox server's file
 * endpoints. Associated with the `files` capability; not gated here (the server decides).
 *
 * Binary-safe by name: `read` is text, `readBytes` is bytes, `write` takes either;
 * `upload` and `download` stream between a local file and the sandbox without holding it in
 * memory (`download` writes through a temp file, so an interrupted one leaves nothing half
 * written). Paths are absolute, or relative to the sandbox's home.
 *
 * Options that are not known are refused, never ignored: `read(p, { format: "bytes" })` (E2B's
 * spelling) is a `ValidationError` pointing at `readBytes`, not text handed back as if bytes.
 *
 * @module
 */

import { ValidationError } from "../errors/mod.ts";
import { checkOptions } from "../errors/option_checks.ts";
import type { FileInfo } from "../models/files.ts";
import type { ModuleContext } from "./module_context.ts";
import { WatchHandle } from "./watch_handle.ts";

/** The data plane's base URL (port 9000 of the sandbox), for `uploadUrl` / `downloadUrl`. */
export type DataPlaneUrl = () => string;

/** One file of `files.write`'s batch form (E2B's `WriteEntry`). */
export interface FileWriteEntry {
  /** Where to write it. */
  path: string;
  /** Its content: text (written as UTF-8) or bytes. */
  data: string | Uint8Array;
}

/** Options of `files.read`. */
export interface FileReadOptions {
  /** The text encoding (default `utf-8`; any label `TextDecoder` knows). */
  encoding?: string;
}

function writeEntries(entries: unknown[]): FileWriteEntry[] {
  return entries.map((entry, i) => {
    const where = `files.write: entry ${i}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new ValidationError(`${where} must be an object {path, data}`);
    }
    checkOptions(where, entry, ["path", "data"]);
    const { path, data } = entry as Record<string, unknown>;
    if (typeof path !== "string" || path === "") {
      throw new ValidationError(`${where}: path must be a non-empty string`);
    }
    if (typeof data !== "string" && !(data instanceof Uint8Array)) {
      throw new ValidationError(`${where}: data must be a string or a Uint8Array`);
    }
    return { path, data };
  });
}

/** The `files` module of a sandbox. */
export class FilesModule {
  readonly #ctx: ModuleContext;
  readonly #dataPlane: DataPlaneUrl;

  /** Made by `Sandbox`. */
  constructor(ctx: ModuleContext, dataPlane: DataPlaneUrl) {
    this.#ctx = ctx;
    this.#dataPlane = dataPlane;
  }

  get #files() {
    return this.#ctx.server().files;
  }

  /**
   * A file's content as text (`utf-8` by default; any encoding `TextDecoder` knows). An unknown
   * encoding, or an option other than `encoding` (such as E2B's `format`), is a
   * `ValidationError` before any request; bytes are `readBytes`.
   */
  async read(path: string, options: FileReadOptions = {}): Promise<string> {
    if (options !== null && typeof options === "object" && "format" in options) {
      throw new ValidationError("files.read: unknown option 'format'; read returns text", {
        suggestion: "Use files.readBytes(path) for bytes, files.read(path) for text.",
      });
    }
    checkOptions("files.read", options, ["encoding"]);
    const encoding = options.encoding ?? "utf-8";
    if (/^utf-?8$/i.test(encoding)) return await this.#files.readText(path);
    let decoder: TextDecoder;
    try {
      decoder = new TextDecoder(encoding);
    } catch (e) {
      throw new ValidationError(`files.read: unknown encoding ${JSON.stringify(encoding)}`, {
        suggestion: "Use an encoding label TextDecoder knows (utf-8, utf-16le, latin1, …).",
        cause: e,
      });
    }
    return decoder.decode(await this.#files.download(path));
  }

  /** A file's content as bytes, exactly. */
  async readBytes(path: string): Promise<Uint8Array> {
    return await this.#files.download(path);
  }

  /**
   * Write a file (text as UTF-8, or bytes as they are), creating its parent directories and
   * replacing it atomically if it exists. Given an array of `{path, data}` (E2B's batch form),
   * writes each of them the same way, in order, and returns their infos; every entry is checked
   * before the first is written, so a bad entry writes nothing.
   */
  write(path: string, content: string | Uint8Array): Promise<FileInfo>;
  /** Write several files, each atomically. */
  write(files: FileWriteEntry[]): Promise<FileInfo[]>;
  async write(
    target: string | FileWriteEntry[],
    content?: string | Uint8Array,
    ...rest: unknown[]
  ): Promise<FileInfo | FileInfo[]> {
    if (rest.length > 0) {
      throw new ValidationError("files.write takes (path, content) or ([{path, data}, …])");
    }
    if (Array.isArray(target)) {
      if (content !== undefined) {
        throw new ValidationError("files.write: the batch form takes the array alone");
      }
      const entries = writeEntries(target);
      const written: FileInfo[] = [];
      for (const { path, data } of entries) written.push(await this.#files.upload(path, data));
      return written;
    }
    if (typeof target !== "string" || target === "") {
      throw new ValidationError(
        "files.write: path must be a non-empty string, or the batch form an array of {path, data}",
      );
    }
    if (typeof content !== "string" && !(content instanceof Uint8Array)) {
      throw new ValidationError("files.write: content must be a string or a Uint8Array");
    }
    return await this.#files.upload(target, content);
  }

  /** A directory's entries (default `/`). */
  async list(path = "/"): Promise<FileInfo[]> {
    return await this.#files.list(path);
  }

  /** Delete a file, or a directory with everything in it. */
  async remove(path: string): Promise<void> {
    await this.#files.delete(path, { recursive: true });
  }

  /** Whether the path exists (a path the policy refuses still throws). */
  async exists(path: string): Promise<boolean> {
    return await this.#files.exists(path);
  }

  /** Create a directory and its parents; false when it already was one. */
  async makeDir(path: string): Promise<boolean> {
    return (await this.#files.mkdir(path)).created;
  }

  /** Upload a local file to `remotePath`, streamed from disk. */
  async upload(localPath: string, remotePath: string): Promise<FileInfo> {
    return await this.#files.uploadFile(localPath, remotePath);
  }

  /** Download `remotePath` to a local file, streamed to disk and renamed into place. */
  async download(remotePath: string, localPath: string): Promise<void> {
    await this.#files.downloadFile(remotePath, localPath);
  }

  /**
   * Watch a directory (recursively by default). Resolves once the watcher is in place, so a
   * change made after the `await` is seen. Iterate the handle for events; `stop()` it (or
   * `await using`) when done.
   */
  async watch(path: string, options: { recursive?: boolean } = {}): Promise<WatchHandle> {
    checkOptions("files.watch", options, ["recursive"]);
    const files = this.#files;
    return await WatchHandle.start(({ signal, onReady }) =>
      files.watch(path, { recursive: options.recursive ?? true, signal, onReady })
    );
  }

  /** Move or rename; the destination is the new full path. */
  async move(source: string, destination: string): Promise<void> {
    await this.#files.move(source, destination);
  }

  /** @deprecated Use {@linkcode move}. */
  async rename(oldPath: string, newPath: string): Promise<void> {
    await this.move(oldPath, newPath);
  }

  /** Metadata of one path. */
  async getInfo(path: string): Promise<FileInfo> {
    return await this.#files.stat(path);
  }

  /**
   * The data-plane URL to upload `path` with (`POST`, the raw body or multipart). The request
   * must send the header `X-Access-Token: <sandbox.info.envdAccessToken>`; it is not a signed
   * URL. The access token may only read and write files.
   */
  uploadUrl(path: string): string {
    return this.#fileUrl(path);
  }

  /** The data-plane URL to download `path` with (`GET`); the same rules as `uploadUrl`. */
  downloadUrl(path: string): string {
    return this.#fileUrl(path);
  }

  #fileUrl(path: string): string {
    const url = new URL(`${this.#dataPlane()}/files`);
    url.searchParams.set("path", path);
    return url.href;
  }
}
