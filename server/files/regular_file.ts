/**
 * What the file endpoints read must be a regular file with one name:
 *
 * - Not a FIFO, a device or a socket. Opening a FIFO for reading blocks until a writer comes
 *   (for ever, holding one of Deno's blocking threads: a few hundred such downloads starve
 *   every other file operation), and a device like `/dev/zero` or `/dev/urandom` never ends.
 *   The guard's stat says what the path is; a FIFO swapped in after it is still caught: an open
 *   still pending after {@linkcode FIFO_RESCUE_MS} is released by opening that FIFO for writing
 *   without blocking (which lets its reader through; nothing else is ever opened so), and the
 *   opened file's own stat decides.
 * - Not a regular file with more than one name (`st_nlink > 1`). A hard link is the file
 *   itself, not a pointer to it: from inside the allowed tree nothing tells a second name of
 *   `/etc/shadow` (or of a file under `paths.deny`) from any other file, and finding the other
 *   names would mean searching every file system. So a file with several names is refused for
 *   download and its content is left out of archives and content searches. The cost: trees
 *   made with `cp -l`, a `git clone --local`'s objects, or a package store that hard-links
 *   (pnpm) cannot be read through the file endpoints (processes, confined by the kernel, still
 *   can). Writing is not affected: an upload replaces the name by rename, never writes through
 *   it, so the other names keep their content.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import { C, cString, loadLibc } from "./libc.ts";

/** How long an open may stay pending before it is assumed to be a FIFO swapped in. */
export const FIFO_RESCUE_MS = 1000;

const O_NONBLOCK = 0o4000;

/** The part of a stat that decides whether a file may be read. */
export interface ReadableKind {
  /** A regular file. */
  isFile: boolean;
  /** A directory. */
  isDirectory: boolean;
  /** Names of the file (hard links); null where the platform does not say. */
  nlink: number | null;
  /** Type bits and permissions, for naming what it is. */
  mode: number | null;
}

/**
 * What a non-regular file is, in words (`a FIFO`, `a character device`, …).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { kindName } from "./regular_file.ts";
 * assert.equal(kindName(0o010644), "a FIFO");
 * assert.equal(kindName(0o020666), "a character device");
 * ```
 */
export function kindName(mode: number | null): string {
  switch ((mode ?? 0) & 0o170000) {
    case 0o010000:
      return "a FIFO";
    case 0o020000:
      return "a character device";
    case 0o060000:
      return "a block device";
    case 0o140000:
      return "a socket";
    case 0o040000:
      return "a directory";
    case 0o120000:
      return "a symbolic link";
  }
  return "not a regular file";
}

/**
 * Refuse what may not be read as a file's content: anything but a regular file
 * (`invalid_arguments`), or a regular file with several names (`path_not_allowed`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertReadableFile } from "./regular_file.ts";
 * const fifo = { isFile: false, isDirectory: false, nlink: 1, mode: 0o010644 };
 * assert.throws(() => assertReadableFile(fifo, "/w/pipe"), /is a FIFO/);
 * ```
 */
export function assertReadableFile(st: ReadableKind, shown: string, param = "path"): void {
  if (!st.isFile) {
    throw new ApiError(
      "invalid_arguments",
      `${shown} is ${kindName(st.mode)}; only regular files can be read`,
      { param },
    );
  }
  if (st.nlink !== null && st.nlink > 1) {
    throw new ApiError(
      "path_not_allowed",
      `${shown} has ${st.nlink} names (hard links); one may lie outside the allowed paths, so ` +
        "it is not read",
      { param },
    );
  }
}

/**
 * If `path` is a FIFO, open it for writing without blocking and close it again: the pending
 * reader gets in. Only a FIFO is opened so: the inode is pinned (`O_PATH`), its type checked, and
 * that very inode reopened through `/proc/self/fd`, so no device (some act on being opened) is
 * ever opened for writing, whatever is swapped in meanwhile.
 */
function releasePendingFifo(path: string): void {
  const lib = loadLibc();
  if (!lib) return;
  const pinned = lib.open(cString(path), C.O_PATH | C.O_CLOEXEC, 0);
  if (pinned < 0) return;
  try {
    const buf = new Uint8Array(256);
    if (lib.statx(pinned, cString(""), C.AT_EMPTY_PATH, C.STATX_BASIC_STATS, buf) !== 0) return;
    if ((new DataView(buf.buffer).getUint16(28, true) & 0o170000) !== 0o010000) return;
    const fd = lib.open(
      cString(`/proc/self/fd/${pinned}`),
      C.O_WRONLY | O_NONBLOCK | C.O_CLOEXEC,
      0,
    );
    if (fd >= 0) lib.close(fd);
  } finally {
    lib.close(pinned);
  }
}

/**
 * `Deno.open(path, { read: true })`, except that a FIFO found there (swapped in after a check)
 * cannot keep it pending for ever: the caller must then refuse what its `stat` says.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openWithoutHanging } from "./regular_file.ts";
 * const dir = await Deno.makeTempDir();
 * await new Deno.Command("mkfifo", { args: [`${dir}/p`] }).output();
 * const file = await openWithoutHanging(`${dir}/p`); // would block without a writer
 * assert.equal((await file.stat()).isFifo, true);
 * file.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function openWithoutHanging(path: string): Promise<Deno.FsFile> {
  const opening = Deno.open(path, { read: true });
  const timer = setTimeout(() => releasePendingFifo(path), FIFO_RESCUE_MS);
  try {
    return await opening;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Open a path for reading once the guard's stat said it is a readable file (see
 * {@linkcode assertReadableFile}); the opened file is checked again by its own stat, so what was
 * swapped in meanwhile is refused, and a FIFO swapped in cannot hold the open for ever.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openReadableFile } from "./regular_file.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "hi");
 * const { file, stat } = await openReadableFile(path, path);
 * assert.equal(stat.size, 2);
 * file.close();
 * await Deno.remove(path);
 * ```
 */
export async function openReadableFile(
  path: string,
  shown: string,
  param = "path",
): Promise<{ file: Deno.FsFile; stat: Deno.FileInfo }> {
  const file = await openWithoutHanging(path);
  try {
    const stat = await file.stat();
    assertReadableFile(stat, shown, param);
    return { file, stat };
  } catch (e) {
    file.close();
    throw e;
  }
}
