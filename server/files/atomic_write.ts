/**
 * Writing a file atomically from a stream: the bytes go to a temp file in the destination's own
 * directory (same file system, so the final rename is atomic), which is synced and then renamed
 * over the destination, or hard-linked to it when it must not be replaced (so "does not exist
 * yet" is decided by the kernel, not by an earlier check). Whatever goes wrong before that (the
 * client aborts, the body passes its limit, the disk fills), the temp file is removed and the
 * destination is as it was: the old file, or no file.
 *
 * Against a directory swapped for a link between the guard's check and the write, the temp file
 * is created with `O_EXCL` and then compared (device and inode) with what the directory holds
 * under its name, and the directory with what the guard checked; the rename names the temp file
 * by the same directory path, so in a swapped directory it fails rather than landing elsewhere.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { ApiError } from "../errors.ts";

/** Options of {@linkcode writeAtomically}. */
export interface AtomicWriteOptions {
  /** Replace an existing file; when false an existing file gives 409 `file_exists`. */
  overwrite: boolean;
  /** `lstat` of the destination's directory at the guard's check, to detect a swap. */
  directory?: Deno.FileInfo;
  /** Bytes the body announced (`Content-Length`); fewer or more is an aborted upload. */
  expectedBytes?: number;
  /** The request parameter named in errors. */
  param?: string;
}

/** The prefix of temp files, so an operator can find leftovers of a crash. */
export const TEMP_PREFIX = ".sandbar-upload-";

function tempName(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `${TEMP_PREFIX}${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}.tmp`;
}

function sameFile(a: Deno.FileInfo | null, b: Deno.FileInfo | null): boolean {
  return a !== null && b !== null && a.dev === b.dev && a.ino === b.ino;
}

async function lstatOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(path);
  } catch {
    return null;
  }
}

function swapped(param: string): ApiError {
  return new ApiError(
    "symlink_denied",
    "The destination directory changed between the check and the write (a link was swapped in)",
    { param },
  );
}

async function writeAll(file: Deno.FsFile, chunk: Uint8Array): Promise<void> {
  let off = 0;
  while (off < chunk.byteLength) off += await file.write(chunk.subarray(off));
}

/**
 * Stream `body` into `target` atomically; returns the final file's `stat`.
 *
 * @example
 * ```ts ignore
 * const st = await writeAtomically("/workspace/a.bin", req.body!, { overwrite: true });
 * ```
 */
export async function writeAtomically(
  target: string,
  body: ReadableStream<Uint8Array>,
  options: AtomicWriteOptions,
): Promise<Deno.FileInfo> {
  const param = options.param ?? "path";
  const dir = dirname(target);
  const temp = join(dir, tempName());
  const existing = await lstatOrNull(target);
  if (existing?.isDirectory) {
    await body.cancel().catch(() => {});
    throw new ApiError("conflict", `${target} is a directory`, { param });
  }
  if (existing && !options.overwrite) {
    await body.cancel().catch(() => {});
    throw new ApiError("file_exists", `${target} exists and overwrite is false`, { param });
  }
  let file: Deno.FsFile;
  try {
    file = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
  } catch (e) {
    await body.cancel().catch(() => {});
    throw e;
  }
  let tempIsOurs = false;
  let closed = false;
  try {
    const opened = await file.stat();
    tempIsOurs = sameFile(opened, await lstatOrNull(temp));
    if (!tempIsOurs) throw swapped(param);
    if (options.directory && !sameFile(options.directory, await lstatOrNull(dir))) {
      throw swapped(param);
    }
    if (existing && existing.mode !== null) await Deno.chmod(temp, existing.mode & 0o7777);
    let written = 0;
    const reader = body.getReader();
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        written += value.byteLength;
        await writeAll(file, value);
      }
    } finally {
      reader.releaseLock();
    }
    if (options.expectedBytes !== undefined && written !== options.expectedBytes) {
      throw new ApiError(
        "invalid_request",
        `The body ended after ${written} of ${options.expectedBytes} bytes`,
        { param },
      );
    }
    await file.syncData();
    file.close();
    closed = true;
    if (options.directory && !sameFile(options.directory, await lstatOrNull(dir))) {
      throw swapped(param);
    }
    if (options.overwrite) {
      await Deno.rename(temp, target);
    } else {
      try {
        await Deno.link(temp, target);
      } catch (e) {
        if (e instanceof Deno.errors.AlreadyExists) {
          throw new ApiError("file_exists", `${target} exists and overwrite is false`, { param });
        }
        throw e;
      }
      await Deno.remove(temp);
    }
    tempIsOurs = false;
    return await Deno.stat(target);
  } catch (e) {
    if (!closed) {
      try {
        file.close();
      } catch { /* already closed */ }
    }
    if (tempIsOurs) await Deno.remove(temp).catch(() => {});
    if (e instanceof Deno.errors.IsADirectory) {
      throw new ApiError("conflict", `${basename(target)} is a directory`, { param, cause: e });
    }
    throw e;
  }
}
