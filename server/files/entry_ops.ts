/**
 * Removing and moving one directory entry through pinned directories (see `pinned_dir.ts`), so
 * a link swapped into a parent after the guard looked cannot redirect the operation; where
 * pinning is not available, the same by path.
 *
 * @module
 */

import { basename, dirname } from "node:path";
import { ApiError } from "../errors.ts";
import { LibcCallError, PinnedDirectory } from "./pinned_dir.ts";

function swapped(param: string): ApiError {
  return new ApiError("symlink_denied", "A link was swapped into the path after the check", {
    param,
  });
}

/** The directory holding `path`, pinned. */
function pin(path: string, noSymlinks: boolean, param: string): PinnedDirectory | null {
  return pinDirectory(dirname(path), noSymlinks, param);
}

function pinDirectory(path: string, noSymlinks: boolean, param: string): PinnedDirectory | null {
  try {
    return PinnedDirectory.open(path, noSymlinks);
  } catch (e) {
    if (e instanceof LibcCallError && e.code === "ELOOP") throw swapped(param);
    throw e;
  }
}

/**
 * Remove a file, a link, or an empty directory; with `recursive`, a directory and everything in
 * it (the tree's contents are removed without following links).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { removeEntry } from "./entry_ops.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/old.txt`, "");
 * await removeEntry(`${dir}/old.txt`, { directory: false, recursive: false, noSymlinks: true });
 * await assert.rejects(Deno.lstat(`${dir}/old.txt`), Deno.errors.NotFound);
 * await Deno.remove(dir);
 * ```
 */
export async function removeEntry(
  path: string,
  options: { directory: boolean; recursive: boolean; noSymlinks: boolean; param?: string },
): Promise<void> {
  const param = options.param ?? "path";
  const dir = pin(path, options.noSymlinks, param);
  if (!dir) {
    await Deno.remove(path, { recursive: options.directory && options.recursive });
    return;
  }
  try {
    if (options.directory && options.recursive) removeTree(dir, basename(path));
    else dir.unlink(basename(path), options.directory);
  } finally {
    dir.close();
  }
}

/** Remove `name` in `dir` and everything below it, each step relative to a pinned directory. */
function removeTree(dir: PinnedDirectory, name: string): void {
  if (dir.stat(name).kind === "directory") {
    const child = dir.child(name);
    try {
      for (const entry of child.names()) removeTree(child, entry);
    } finally {
      child.close();
    }
    dir.unlink(name, true);
  } else dir.unlink(name);
}

/**
 * Create the missing directories of `path` below its deepest existing ancestor `existing`,
 * each with `mkdirat` in the pinned directory made just before, so a link swapped in meanwhile
 * cannot make them appear elsewhere. Returns whether the last one was created here.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { makeDirectories } from "./entry_ops.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * assert.equal(await makeDirectories(dir, `${dir}/a/b`, true), true);
 * assert.equal((await Deno.stat(`${dir}/a/b`)).isDirectory, true);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function makeDirectories(
  existing: string,
  path: string,
  noSymlinks: boolean,
  param = "path",
): Promise<boolean> {
  const rest = path.slice(existing === "/" ? 1 : existing.length + 1).split("/").filter(Boolean);
  let dir = pinDirectory(existing, noSymlinks, param);
  if (!dir) {
    await Deno.mkdir(path, { recursive: true });
    return true;
  }
  let created = false;
  try {
    for (const name of rest) {
      try {
        dir.mkdir(name);
        created = true;
      } catch (e) {
        if ((e as LibcCallError).code !== "EEXIST") throw e;
        created = false;
      }
      const next: PinnedDirectory = dir.child(name);
      dir.close();
      dir = next;
    }
  } catch (e) {
    const code = (e as LibcCallError).code;
    if (code === "ENOTDIR" || code === "ELOOP") {
      throw new ApiError("file_exists", `A part of ${path} exists and is not a directory`, {
        param,
        cause: e,
      });
    }
    if (code === "ENOENT") {
      // Made (or found) and gone before it was entered: changed by someone else meanwhile.
      throw new ApiError("symlink_denied", `A part of ${path} changed while it was made`, {
        param,
        cause: e,
      });
    }
    throw e;
  } finally {
    dir.close();
  }
  return created;
}

/**
 * Move `source` to `destination`. Without `overwrite`, an existing destination is never
 * replaced: a file is hard-linked then unlinked (the kernel refuses an existing name); a
 * directory is renamed after a check.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { moveEntry } from "./entry_ops.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/a.txt`, "hi");
 * const options = { directory: false, overwrite: false, noSymlinks: true };
 * await moveEntry(`${dir}/a.txt`, `${dir}/b.txt`, options);
 * assert.equal(await Deno.readTextFile(`${dir}/b.txt`), "hi");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function moveEntry(
  source: string,
  destination: string,
  options: { directory: boolean; overwrite: boolean; noSymlinks: boolean },
): Promise<void> {
  const exists = () =>
    new ApiError("file_exists", `${destination} exists and overwrite is false`, {
      param: "destination",
    });
  const from = pin(source, options.noSymlinks, "source");
  let to: PinnedDirectory | null = null;
  try {
    to = from ? pin(destination, options.noSymlinks, "destination") : null;
  } catch (e) {
    from?.close(); // A refused destination must not leak the source's descriptor.
    throw e;
  }
  if (!from || !to) {
    from?.close();
    if (!options.overwrite && !options.directory) {
      try {
        await Deno.link(source, destination);
      } catch (e) {
        if (e instanceof Deno.errors.AlreadyExists) throw exists();
        throw e;
      }
      await Deno.remove(source);
    } else await Deno.rename(source, destination);
    return;
  }
  try {
    const a = basename(source);
    const b = basename(destination);
    if (!options.overwrite && !options.directory) {
      try {
        from.link(a, b, to);
      } catch (e) {
        if ((e as LibcCallError).code === "EEXIST") throw exists();
        throw e;
      }
      from.unlink(a);
    } else from.rename(a, b, to);
  } finally {
    from.close();
    to.close();
  }
}
