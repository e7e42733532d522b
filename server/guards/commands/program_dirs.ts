/**
 * The directories programs are looked up in, as one list: the command guard admits `dir/name`
 * for a name entry of `allow_commands` in each of them, the confinement lets a process execute
 * what they hold, and the server's own tools run with them as `PATH`. Three copies of this list
 * could drift apart, and then a command the guard admits would be one the kernel refuses (or the
 * other way round).
 *
 * @module
 */

/**
 * Directories programs are looked up in, in `PATH` order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROGRAM_DIRS, PROGRAM_PATH } from "./program_dirs.ts";
 * assert.ok(PROGRAM_DIRS.includes("/usr/bin"));
 * assert.equal(PROGRAM_PATH.split(":").length, PROGRAM_DIRS.length);
 * ```
 */
export const PROGRAM_DIRS: readonly string[] = [
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
];

/** {@linkcode PROGRAM_DIRS} as a `PATH` value. */
export const PROGRAM_PATH: string = PROGRAM_DIRS.join(":");
