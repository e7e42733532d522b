/**
 * The data directory's modes: the store, its WAL and journal, the store key, uploads and
 * artifacts are the server's alone, so every file under the directory is 0600 and every
 * directory 0700. Files are created with those modes (explicitly, never by the process umask,
 * which the server's children share); a directory an older sandbar left readable by others is
 * put right when the store opens.
 *
 * @module
 */

import { join } from "node:path";

/** The mode of every file under the data directory. */
export const DATA_FILE_MODE = 0o600;
/** The mode of the data directory and every directory under it. */
export const DATA_DIR_MODE = 0o700;

/**
 * Make `dir` and everything under it private to the server's user: directories 0700, files
 * 0600. Links are left as they are (and not followed: nothing outside is changed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { makePrivate } from "./data_dir.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a`, "x", { mode: 0o644 });
 * Deno.chmodSync(`${dir}/a`, 0o644);
 * makePrivate(dir);
 * assert.equal(Deno.statSync(`${dir}/a`).mode! & 0o777, 0o600);
 * assert.equal(Deno.statSync(dir).mode! & 0o777, 0o700);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function makePrivate(dir: string): void {
  fix(dir, DATA_DIR_MODE);
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isSymlink) continue;
    if (entry.isDirectory) makePrivate(path);
    else if (entry.isFile) fix(path, DATA_FILE_MODE);
  }
}

function fix(path: string, mode: number): void {
  const st = Deno.lstatSync(path);
  if (st.isSymlink || st.mode === null) return;
  if ((st.mode & 0o777) !== mode) Deno.chmodSync(path, mode);
}
