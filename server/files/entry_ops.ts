/**
 * Removing and moving one directory entry through pinned directories (see `pinned_dir.ts`), so
 * a link swapped into a parent after the guard looked cannot redirect the operation; where
 * pinning is not available, the same by path.
 *
 * @module
 */

import { basename, dirname } from "node:path";
import { ApiError } from "../errors.ts";
import { PinnedDirectory, PinnedDirectoryError } from "./pinned_dir.ts";

function swapped(param: string): ApiError {
  return new ApiError("symlink_denied", "A link was swapped into the path after the check", {
    param,
  });
}

function pin(path: string, noSymlinks: boolean, param: string): PinnedDirectory | null {
  try {
    return PinnedDirectory.open(dirname(path), noSymlinks);
  } catch (e) {
    if (e instanceof PinnedDirectoryError && e.code === "ELOOP") throw swapped(param);
    throw e;
  }
}

/**
 * Remove a file, a link, or an empty directory; with `recursive`, a directory and everything in
 * it (the tree's contents are removed without following links).
 *
 * @example
 * ```ts ignore
 * await removeEntry("/workspace/old.txt", { directory: false, recursive: false, noSymlinks: true });
 * ```
 */
export async function removeEntry(
  path: string,
  options: { directory: boolean; recursive: boolean; noSymlinks: boolean; param?: string },
): Promise<void> {
  const param = options.param ?? "path";
  if (options.directory && options.recursive) {
    await Deno.remove(path, { recursive: true });
    return;
  }
  const dir = pin(path, options.noSymlinks, param);
  if (!dir) {
    await Deno.remove(path);
    return;
  }
  try {
    dir.unlink(basename(path), options.directory);
  } finally {
    dir.close();
  }
}

/**
 * Move `source` to `destination`. Without `overwrite`, an existing destination is never
 * replaced: a file is hard-linked then unlinked (the kernel refuses an existing name); a
 * directory is renamed after a check.
 *
 * @example
 * ```ts ignore
 * await moveEntry("/w/a.txt", "/w/b.txt", { directory: false, overwrite: false, noSymlinks: true });
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
  const to = from ? pin(destination, options.noSymlinks, "destination") : null;
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
        if ((e as PinnedDirectoryError).code === "EEXIST") throw exists();
        throw e;
      }
      from.unlink(a);
    } else from.rename(a, b, to);
  } finally {
    from.close();
    to.close();
  }
}
