/**
 * `files_list` (`GET /files/list`), and the `paths.deny` filter every listing of entries uses.
 *
 * @module
 */

import type { Context } from "hono";
import { join } from "node:path";
import { ApiError } from "../../errors.ts";
import { deniedBy } from "../../guards/paths/index.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { describePath, type FileInfo } from "../../files/info.ts";
import { walkTree } from "../../files/tree_walk.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import { queryInt } from "../../request_reader.ts";

/** The deepest `depth` a listing accepts. */
export const MAX_LIST_DEPTH = 16;

/** Whether an entry (by its shown and its real path) is hidden by `paths.deny`. */
export function isDeniedEntry(state: ServerState, shown: string, real: string): boolean {
  const deny = state.policy.paths.deny;
  return deny.length > 0 &&
    (deniedBy(shown, deny) !== undefined || deniedBy(real, deny) !== undefined);
}

/**
 * `GET /files/list?path=&depth=`.
 */
export async function listDirectory(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const depth = queryInt(c, "depth", 1, 1, MAX_LIST_DEPTH);
  const g = resolveGuardedPath(state, c.req.query("path"), "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  if (!g.stat!.isDirectory) {
    throw new ApiError("invalid_arguments", `${g.requested} is not a directory`, { param: "path" });
  }
  const entries: FileInfo[] = [];
  const walk = walkTree(g.path, {
    expect: g.stat,
    maxDepth: depth,
    noSymlinks: state.policy.paths.symlinks !== "allow",
    include: (e) => !isDeniedEntry(state, join(g.requested, e.rel), e.path),
  });
  for await (const e of walk) {
    entries.push(describePath(state, join(g.requested, e.rel), e.stat, e.linkTarget));
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return c.json({ path: g.requested, entries });
}
