/**
 * Whether a path names a program that can be started, asked of the kernel (`access(X_OK)`)
 * rather than through Deno's file API, which the narrowed permissions would refuse for a shell
 * outside the readable directories (`/opt/...`), making it look absent.
 *
 * @module
 */

import { cString, libc } from "../libc/index.ts";

const X_OK = 1;

/**
 * True when `path` is executable by the server and is not a directory.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { isExecutableFile } from "./executable.ts";
 * assert.equal(isExecutableFile(Deno.execPath()), true);
 * assert.equal(isExecutableFile(Deno.cwd()), false); // a directory
 * ```
 */
export function isExecutableFile(path: string): boolean {
  const c = libc();
  const p = cString(path);
  if (c.access(p, X_OK) !== 0) return false;
  // Directories pass X_OK too; opendir only opens directories.
  const dir = c.opendir(p);
  if (dir === null) return true;
  c.closedir(dir);
  return false;
}
