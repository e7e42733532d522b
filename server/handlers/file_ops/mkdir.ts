/**
 * `files_mkdir` (`POST /files/mkdir`).
 *
 * @module
 */

import type { Context } from "hono";
import { dirname } from "node:path";
import { z } from "zod";
import { ApiError } from "../../errors.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { makeDirectories } from "../../files/entry_ops.ts";
import type { ServerEnv } from "../../state.ts";
import { readBody } from "../../request_reader.ts";

const mkdirBody = z.strictObject({
  path: z.unknown(),
  parents: z.boolean().default(true),
  exist_ok: z.boolean().default(true),
});

/**
 * Create a directory (and its parents, unless `parents` is false).
 */
export async function makeDirectory(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const body = await readBody(c, mkdirBody);
  const g = resolveGuardedPath(state, body.path, "write");
  if (g.exists) {
    if (g.stat!.isDirectory && body.exist_ok) return c.json({ path: g.requested, created: false });
    throw new ApiError(
      "file_exists",
      `${g.requested} exists${g.stat!.isDirectory ? "" : " and is not a directory"}`,
      { param: "path" },
    );
  }
  if (!body.parents && g.ancestor.path !== dirname(g.path)) {
    throw new ApiError("not_found", `The parent of ${g.requested} does not exist`, {
      param: "path",
    });
  }
  const created = await makeDirectories(
    g.ancestor.path,
    g.path,
    state.policy.paths.symlinks !== "allow",
  );
  if (!created && !body.exist_ok) {
    throw new ApiError("file_exists", `${g.requested} exists`, { param: "path" });
  }
  return c.json({ path: g.requested, created });
}
