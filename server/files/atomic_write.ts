/**
 * Writing a file atomically from a stream: the bytes go to a temp file in the destination's own
 * directory (same file system, so the final rename is atomic), which is synced and then renamed
 * over the destination, or hard-linked to it when it must not be replaced (so "does not exist
 * yet" is decided by the kernel, not by an earlier check). Whatever goes wrong before that (the
 * client aborts, the body passes its limit, the disk fills), the temp file is removed and the
 * destination is as it was: the old file, or no file.
 *
 * Against a link swapped into the destination's path after the guard looked: on Linux the
 * directory is pinned by descriptor, opened with `RESOLVE_NO_SYMLINKS` (see `pinned_dir.ts`), and
 * the temp file, the rename and the cleanup all happen relative to it, so nothing can land
 * elsewhere. Where that is not available, the temp file is created with `O_EXCL` and compared
 * (device and inode) with what the directory holds under its name, and the directory with what
 * the guard checked; the rename names the temp file by the same directory path, so in a swapped
 * directory it fails rather than landing elsewhere.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { ApiError } from "../errors.ts";
import { collectYoungGarbage } from "./memory.ts";
import { type EntryStat, entryStatOf, LibcCallError, PinnedDirectory } from "./pinned_dir.ts";
import { kindName } from "./regular_file.ts";

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
  /** Refuse a link in any component of the directory's path (`paths.symlinks` is not `allow`). */
  noSymlinks?: boolean;
}

/** Bytes written between two young-generation collections (see `memory.ts`). */
const COLLECT_EVERY = 16 * 1024 * 1024;

/** The prefix of temp files, so an operator can find leftovers of a crash. */
export const TEMP_PREFIX = ".sandbar-upload-";

/** Random bytes in a temp file's name (as hex: twice as many characters). */
const TEMP_RANDOM_BYTES = 12;

const TEMP_NAME = new RegExp(`^\\.sandbar-upload-[0-9a-f]{${TEMP_RANDOM_BYTES * 2}}\\.tmp$`);

function tempName(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(TEMP_RANDOM_BYTES));
  return `${TEMP_PREFIX}${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}.tmp`;
}

/**
 * Whether `name` (a base name) has the exact form of this module's temp files, so a watcher can
 * leave out the steps of an atomic write and report only the file it produced. A user's file
 * that merely starts with the prefix is not one.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { isTempName } from "./atomic_write.ts";
 * assert.equal(isTempName(".sandbar-upload-0123456789abcdef01234567.tmp"), true);
 * assert.equal(isTempName(".sandbar-upload-notes.txt"), false);
 * ```
 */
export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
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
 * Stream `body` into `target` atomically; returns what the final file is.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeAtomically } from "./atomic_write.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * const body = new Response("hello").body!;
 * const st = await writeAtomically(`${dir}/a.txt`, body, { overwrite: false });
 * assert.equal(st.size, 5);
 * assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "hello");
 * const again = writeAtomically(`${dir}/a.txt`, new Response("x").body!, { overwrite: false });
 * await assert.rejects(again, { code: "file_exists" });
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeAtomically(
  target: string,
  body: ReadableStream<Uint8Array>,
  options: AtomicWriteOptions,
): Promise<EntryStat> {
  const param = options.param ?? "path";
  const existing = await lstatOrNull(target);
  let pinned: PinnedDirectory | null = null;
  try {
    if (existing?.isDirectory) {
      throw new ApiError("conflict", `${target} is a directory`, { param });
    }
    if (existing && !existing.isFile && !existing.isSymlink) {
      // A FIFO, a device or a socket is not replaced by a file behind its user's back.
      throw new ApiError(
        "conflict",
        `${target} is ${kindName(existing.mode)}, not a regular file`,
        { param },
      );
    }
    if (existing && !options.overwrite) {
      throw new ApiError("file_exists", `${target} exists and overwrite is false`, { param });
    }
    pinned = PinnedDirectory.open(dirname(target), options.noSymlinks ?? true);
  } catch (e) {
    await body.cancel().catch(() => {});
    // A link in the way, or the directory gone or no longer one since the check: changed.
    if (e instanceof LibcCallError && ["ELOOP", "ENOENT", "ENOTDIR"].includes(e.code)) {
      throw swapped(param);
    }
    throw e;
  }
  if (!pinned) return await writeByPath(target, body, options, existing);
  try {
    return await writePinned(pinned, target, body, options, existing);
  } finally {
    pinned.close();
  }
}

async function readInto(
  body: ReadableStream<Uint8Array>,
  write: (chunk: Uint8Array<ArrayBuffer>) => Promise<void> | void,
): Promise<number> {
  let written = 0;
  let sinceCollect = 0;
  const reader = body.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return written;
      written += value.byteLength;
      await write(value as Uint8Array<ArrayBuffer>);
      sinceCollect += value.byteLength;
      if (sinceCollect >= COLLECT_EVERY) {
        sinceCollect = 0;
        await collectYoungGarbage();
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function checkLength(written: number, expected: number | undefined, param: string): void {
  if (expected !== undefined && written !== expected) {
    throw new ApiError("invalid_request", `The body ended after ${written} of ${expected} bytes`, {
      param,
    });
  }
}

async function writePinned(
  dir: PinnedDirectory,
  target: string,
  body: ReadableStream<Uint8Array>,
  options: AtomicWriteOptions,
  existing: Deno.FileInfo | null,
): Promise<EntryStat> {
  const param = options.param ?? "path";
  const name = basename(target);
  const temp = tempName();
  let fd = -1;
  let created = false;
  try {
    fd = dir.createExclusive(temp, 0o644);
    created = true;
    if (existing?.mode != null) dir.chmod(fd, existing.mode & 0o7777);
    checkLength(
      await readInto(body, (chunk) => dir.write(fd, chunk)),
      options.expectedBytes,
      param,
    );
    await dir.sync(fd);
    dir.closeFile(fd);
    fd = -1;
    if (options.overwrite) dir.rename(temp, name);
    else {
      try {
        dir.link(temp, name);
      } catch (e) {
        if ((e as LibcCallError).code === "EEXIST") {
          throw new ApiError("file_exists", `${target} exists and overwrite is false`, { param });
        }
        throw e;
      }
      dir.unlink(temp);
    }
    created = false;
    // Described through the pinned directory: by path it may already be somewhere else.
    return dir.stat(name);
  } catch (e) {
    if (fd >= 0) dir.closeFile(fd);
    if (created) {
      try {
        dir.unlink(temp);
      } catch { /* already gone */ }
    }
    await body.cancel().catch(() => {});
    if ((e as LibcCallError).code === "EISDIR") {
      throw new ApiError("conflict", `${target} is a directory`, { param, cause: e });
    }
    // The pinned directory was removed meanwhile (nothing can be made in it): changed.
    if (e instanceof LibcCallError && e.code === "ENOENT") throw swapped(param);
    throw e;
  }
}

async function writeByPath(
  target: string,
  body: ReadableStream<Uint8Array>,
  options: AtomicWriteOptions,
  existing: Deno.FileInfo | null,
): Promise<EntryStat> {
  const param = options.param ?? "path";
  const dir = dirname(target);
  const temp = join(dir, tempName());
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
    checkLength(
      await readInto(body, (chunk) => writeAll(file, chunk)),
      options.expectedBytes,
      param,
    );
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
    return entryStatOf(await Deno.lstat(target));
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
