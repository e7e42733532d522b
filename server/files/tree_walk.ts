/**
 * Walking a directory tree for list, search and archive without ever following a link, and
 * without letting a link swapped in during the walk redirect it: each directory is held by
 * descriptor (`PinnedDirectory`), its children are read and `statx`ed relative to it, and
 * subdirectories are opened from it with `O_NOFOLLOW`. A file's content is opened by path and
 * then compared (device and inode) with what the walk saw, so a swap in between gives "skip",
 * never another file. Where pinning is not available the walk is path-based (`lstat`, no link
 * followed) with the same content check.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { ApiError } from "../errors.ts";
import { type EntryStat, entryStatOf, PinnedDirectory } from "./pinned_dir.ts";
import { openWithoutHanging } from "./regular_file.ts";

/** One entry met by {@linkcode walkTree}. */
export interface WalkEntry {
  /** Path relative to the walk's root, `/`-separated; `""` for the root itself. */
  rel: string;
  /** Absolute path on disk (as of the walk). */
  path: string;
  /** What the entry itself is (a link is not followed). */
  stat: EntryStat;
  /** For a link, its text. */
  linkTarget: string | null;
}

/** Options of {@linkcode walkTree}. */
export interface WalkOptions {
  /** Levels below the root to visit (1: the root's own entries). */
  maxDepth: number;
  /** Keep an entry (and, for a directory, descend into it)? */
  include?: (entry: WalkEntry) => boolean;
  /** The root's path must have no link in it (`paths.symlinks` is not `allow`). */
  noSymlinks: boolean;
  /** Yield the root itself first. */
  includeRoot?: boolean;
  /** What the guard saw at the root; a different file there now is `symlink_denied`. */
  expect?: Deno.FileInfo | null;
}

function swapped(): ApiError {
  return new ApiError("symlink_denied", "The path changed between the check and the use", {
    param: "path",
  });
}

/**
 * Open a walked file for reading, or null when the path no longer leads to that file or the
 * file has more than one name (a hard link, see `regular_file.ts`).
 */
export async function openWalked(entry: WalkEntry): Promise<Deno.FsFile | null> {
  let file: Deno.FsFile;
  try {
    file = await openWithoutHanging(entry.path);
  } catch {
    return null;
  }
  try {
    const st = await file.stat();
    // A second name may be one of a file outside the tree (see `regular_file.ts`).
    const oneName = (st.nlink ?? 1) <= 1;
    if (st.dev === entry.stat.dev && st.ino === entry.stat.ino && st.isFile && oneName) {
      return file;
    }
  } catch { /* fall through */ }
  file.close();
  return null;
}

/** A directory's children through a pinned descriptor, or by path. */
interface DirectoryReader {
  names(): Promise<string[]>;
  stat(name: string): Promise<EntryStat>;
  readLink(name: string): Promise<string>;
  child(name: string): Promise<DirectoryReader>;
  close(): void;
}

function pinnedReader(dir: PinnedDirectory): DirectoryReader {
  return {
    names: () => Promise.resolve(dir.names()),
    stat: (name) => Promise.resolve(dir.stat(name)),
    readLink: (name) => Promise.resolve(dir.readLink(name)),
    child: (name) => Promise.resolve(pinnedReader(dir.child(name))),
    close: () => dir.close(),
  };
}

function pathReader(path: string): DirectoryReader {
  return {
    names: async () => {
      const out: string[] = [];
      for await (const e of Deno.readDir(path)) out.push(e.name);
      return out;
    },
    stat: async (name) => entryStatOf(await Deno.lstat(join(path, name))),
    readLink: (name) => Deno.readLink(join(path, name)),
    child: async (name) => {
      const st = await Deno.lstat(join(path, name));
      if (!st.isDirectory) throw new Error(`${name} is no longer a directory`);
      return pathReader(join(path, name));
    },
    close: () => {},
  };
}

/**
 * Walk `root` depth first, names sorted, never following a link.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { walkTree } from "./tree_walk.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.mkdir(`${dir}/src`);
 * await Deno.writeTextFile(`${dir}/src/a.ts`, "");
 * const seen: string[] = [];
 * for await (const e of walkTree(dir, { maxDepth: 8, noSymlinks: true })) {
 *   seen.push(`${e.rel} ${e.stat.kind}`);
 * }
 * assert.deepEqual(seen, ["src directory", "src/a.ts file"]);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function* walkTree(root: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  const include = options.include ?? (() => true);
  // The root is looked at from its parent, so that a root that is a file works too.
  const parentPath = dirname(root);
  const rootName = basename(root);
  const pinned = PinnedDirectory.open(parentPath, options.noSymlinks);
  const parent = pinned ? pinnedReader(pinned) : pathReader(parentPath);
  try {
    const rootStat = rootName === ""
      ? entryStatOf(await Deno.lstat(root))
      : await parent.stat(rootName);
    const expect = options.expect;
    if (expect && (expect.dev !== rootStat.dev || expect.ino !== rootStat.ino)) throw swapped();
    const top: WalkEntry = {
      rel: "",
      path: root,
      stat: rootStat,
      linkTarget: rootStat.kind === "symlink"
        ? await parent.readLink(rootName).catch(() => null)
        : null,
    };
    if (options.includeRoot) {
      if (!include(top)) return;
      yield top;
    }
    if (rootStat.kind !== "directory") return;
    let dir: DirectoryReader;
    try {
      dir = rootName === "" ? pathReader(root) : await parent.child(rootName);
    } catch {
      throw swapped(); // It was a directory a moment ago.
    }
    try {
      yield* walkDirectory(dir, root, "", 1, options, include);
    } finally {
      dir.close();
    }
  } finally {
    parent.close();
  }
}

async function* walkDirectory(
  dir: DirectoryReader,
  path: string,
  rel: string,
  depth: number,
  options: WalkOptions,
  include: (entry: WalkEntry) => boolean,
): AsyncGenerator<WalkEntry> {
  let names: string[];
  try {
    names = await dir.names();
  } catch {
    return; // Removed or unreadable while we walked.
  }
  names.sort();
  for (const name of names) {
    let stat: EntryStat;
    try {
      stat = await dir.stat(name);
    } catch {
      continue; // Vanished since it was listed.
    }
    let linkTarget: string | null = null;
    if (stat.kind === "symlink") linkTarget = await dir.readLink(name).catch(() => null);
    const entry: WalkEntry = {
      rel: rel === "" ? name : `${rel}/${name}`,
      path: join(path, name),
      stat,
      linkTarget,
    };
    if (!include(entry)) continue;
    yield entry;
    if (stat.kind !== "directory" || depth >= options.maxDepth) continue;
    let child: DirectoryReader;
    try {
      child = await dir.child(name);
    } catch {
      continue; // Swapped for a link, or gone: not descended.
    }
    try {
      yield* walkDirectory(child, entry.path, entry.rel, depth + 1, options, include);
    } finally {
      child.close();
    }
  }
}
