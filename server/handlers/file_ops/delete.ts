/**
 * `files_delete` (`DELETE /files?path=&recursive=`).
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import { isWithin } from "../../guards/paths/index.ts";
import { type GuardedPath, resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { assertTreeRemovable } from "../../guards/paths/tree.ts";
import { removeEntry } from "../../files/entry_ops.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import { queryBool } from "../../request_reader.ts";

/**
 * Refuse to remove (or move away) an allowed tree itself or one of its ancestors.
 */
export async function assertNotAllowedRoot(
  state: ServerState,
  g: GuardedPath,
  param: string,
): Promise<void> {
  for (const tree of state.policy.paths.allow) {
    const real = await Deno.realPath(tree).catch(() => tree);
    if (isWithin(tree, g.requested) || isWithin(real, g.path)) {
      throw new ApiError("conflict", `${g.requested} is an allowed directory itself`, { param });
    }
  }
}

/**
 * Refuse with `symlink_denied` when the entry at `g.path` is no longer the one checked.
 */
export async function assertUnchanged(g: GuardedPath, param: string): Promise<void> {
  const now = await Deno.lstat(g.path).catch(() => null);
  if (!now || now.dev !== g.stat!.dev || now.ino !== g.stat!.ino) {
    throw new ApiError("symlink_denied", `${g.requested} changed between the check and the use`, {
      param,
    });
  }
}

/**
 * Delete a file, a link (never its target) or a directory.
 */
export async function deletePath(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const recursive = queryBool(c, "recursive", false);
  const g = resolveGuardedPath(state, c.req.query("path"), "delete");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  await assertNotAllowedRoot(state, g, "path");
  const isDirectory = g.stat!.isDirectory;
  if (isDirectory && recursive) {
    await assertTreeRemovable(state.policy.paths, g.requested, g.path, "path");
  }
  await assertUnchanged(g, "path");
  try {
    await removeEntry(g.path, {
      directory: isDirectory,
      recursive,
      noSymlinks: state.policy.paths.symlinks !== "allow",
    });
  } catch (e) {
    if ((e as { code?: string }).code === "ENOTEMPTY") {
      throw new ApiError("conflict", `${g.requested} is not empty; pass recursive=true`, {
        param: "path",
      });
    }
    throw e;
  }
  return c.json({ path: g.requested, deleted: true });
}
