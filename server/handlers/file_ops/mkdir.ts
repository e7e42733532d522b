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
import type { ServerEnv } from "../../state.ts";
import { jsonBody } from "./params.ts";

const mkdirBody = z.object({
  path: z.unknown(),
  parents: z.boolean().default(true),
  exist_ok: z.boolean().default(true),
});

/**
 * Create a directory (and its parents, unless `parents` is false).
 *
 * @example
 * ```ts ignore
 * files_mkdir: makeDirectory,
 * ```
 */
export async function makeDirectory(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const body = await jsonBody(c, mkdirBody);
  const g = await resolveGuardedPath(state, body.path, "write");
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
  try {
    await Deno.mkdir(g.path, { recursive: body.parents });
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists && body.exist_ok) {
      const now = await resolveGuardedPath(state, body.path, "write");
      if (now.stat?.isDirectory) return c.json({ path: g.requested, created: false });
    }
    throw e;
  }
  return c.json({ path: g.requested, created: true });
}
