/**
 * `files_stat` (`GET /files/stat`).
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { describePath } from "../../files/info.ts";
import { entryStatOf } from "../../files/pinned_dir.ts";
import type { ServerEnv } from "../../state.ts";

/**
 * `GET /files/stat?path=`.
 */
export async function statPath(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  // The followed check refuses a link whose target is not allowed; the second look describes
  // the link itself, so `symlink` and `symlink_target` are reported.
  const target = resolveGuardedPath(state, c.req.query("path"), "read");
  if (!target.exists) {
    throw new ApiError("not_found", `${target.requested} does not exist`, { param: "path" });
  }
  const g = resolveGuardedPath(state, c.req.query("path"), "read", "path", {
    followFinal: false,
  });
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  const link = g.stat!.isSymlink ? await Deno.readLink(g.path).catch(() => null) : null;
  return c.json(describePath(state, g.requested, entryStatOf(g.stat!), link));
}
