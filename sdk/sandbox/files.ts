/**
 * The `files` module: the sandbox's file system, through the in-sandbox server's file
 * endpoints. Associated with the `files` capability; not gated here (the server decides).
 *
 * Binary-safe by name (pain point 7): `read` is text, `readBytes` is bytes, `write` takes either;
 * `upload` and `download` stream between a local file and the sandbox without holding it in
 * memory (`download` writes through a temp file, so an interrupted one leaves nothing half
 * written). Paths are absolute, or relative to the sandbox's home.
 *
 * @module
 */

import type { FileInfo } from "../models/files.ts";
import type { ModuleContext } from "./module_context.ts";
import { WatchHandle } from "./watch_handle.ts";

/** The data plane's base URL (port 9000 of the sandbox), for `uploadUrl` / `downloadUrl`. */
export type DataPlaneUrl = () => string;

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

  /** A file's content as text (`utf-8` by default; any encoding `TextDecoder` knows). */
  async read(path: string, options: { encoding?: string } = {}): Promise<string> {
    const encoding = options.encoding ?? "utf-8";
    if (/^utf-?8$/i.test(encoding)) return await this.#files.readText(path);
    return new TextDecoder(encoding).decode(await this.#files.download(path));
  }

  /** A file's content as bytes, exactly. */
  async readBytes(path: string): Promise<Uint8Array> {
    return await this.#files.download(path);
  }

  /**
   * Write a file (text as UTF-8, or bytes as they are), creating its parent directories and
   * replacing it atomically if it exists.
   */
  async write(path: string, content: string | Uint8Array): Promise<FileInfo> {
    return await this.#files.upload(path, content);
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
