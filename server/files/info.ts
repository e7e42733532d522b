/**
 * `FileInfo`, the one description of a path every file endpoint answers with: the SDK
 * contract's `{name, path, type, size}` plus `mode`, `modified`, `symlink` and
 * `symlink_target`.
 *
 * @module
 */

import { basename } from "node:path";
import { resolveGuardedPath } from "../guards/paths/resolve.ts";
import type { ServerState } from "../state.ts";
import { type EntryStat, entryStatOf } from "./pinned_dir.ts";

/** One file or directory, as the file endpoints describe it. */
export interface FileInfo {
  /** Base name. */
  name: string;
  /** Absolute path, as asked (not the link target). */
  path: string;
  /** `file` or `directory`; for a link, its target's type when the target is allowed. */
  type: "file" | "directory";
  /** Bytes. */
  size: number;
  /** Permission bits (`0o644` is 420). */
  mode: number;
  /** Last modification, ISO 8601, or null. */
  modified: string | null;
  /** Whether the entry itself is a symbolic link. */
  symlink: boolean;
  /** The link's text as stored, when `symlink`. */
  symlink_target: string | null;
}

function plain(path: string, st: EntryStat): FileInfo {
  return {
    name: basename(path) || "/",
    path,
    type: st.kind === "directory" ? "directory" : "file",
    size: st.size,
    mode: st.mode & 0o7777,
    modified: st.mtime?.toISOString() ?? null,
    symlink: false,
    symlink_target: null,
  };
}

/**
 * Describe a path from what `lstat` (or `statx`) said of it. For a link, the target is
 * described only when the path guard would let a read through it, so a link never reveals what
 * lies outside.
 */
export function describePath(
  state: ServerState,
  shown: string,
  lstat: EntryStat,
  linkTarget: string | null,
): FileInfo {
  if (lstat.kind !== "symlink") return plain(shown, lstat);
  const target = linkTarget;
  let followed: EntryStat | null = null;
  try {
    const g = resolveGuardedPath(state, shown, "read");
    if (g.exists && g.stat) followed = entryStatOf(g.stat);
  } catch { /* refused or dangling: described as the link alone */ }
  const info = plain(shown, followed ?? lstat);
  if (!followed) info.type = "file";
  info.symlink = true;
  info.symlink_target = target;
  return info;
}

/**
 * Describe a path that is known not to be a link from its stat, without touching the disk.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeStat } from "./info.ts";
 * import { entryStatOf } from "./pinned_dir.ts";
 * const path = await Deno.makeTempFile();
 * const info = describeStat("/workspace/a.txt", entryStatOf(await Deno.lstat(path)));
 * assert.equal(info.name, "a.txt");
 * assert.equal(info.type, "file");
 * await Deno.remove(path);
 * ```
 */
export function describeStat(shown: string, st: EntryStat): FileInfo {
  return plain(shown, st);
}
