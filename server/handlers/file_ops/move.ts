/**
 * `files_move` (`POST /files/move`).
 *
 * @module
 */

import type { Context } from "hono";
import { basename, dirname } from "node:path";
import { z } from "zod";
import { ApiError } from "../../errors.ts";
import { assertExtensionAllowed } from "../../guards/paths/extensions.ts";
import { isWithin } from "../../guards/paths/index.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { assertTreeRemovable } from "../../guards/paths/tree.ts";
import { moveEntry } from "../../files/entry_ops.ts";
import type { ServerEnv } from "../../state.ts";
import { assertNotAllowedRoot, assertUnchanged } from "./delete.ts";
import { readBody } from "../../request_reader.ts";

const moveBody = z.strictObject({
  source: z.unknown(),
  destination: z.unknown(),
  overwrite: z.boolean().default(false),
});

/**
 * Move or rename; the destination is the new full path. Without `overwrite`, a file is moved by
 * hard link and unlink, so an existing destination is never replaced, even by a race.
 */
export async function movePath(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const body = await readBody(c, moveBody);
  const s = resolveGuardedPath(state, body.source, "delete", "source");
  const d = resolveGuardedPath(state, body.destination, "write", "destination", {
    followFinal: false,
  });
  if (!s.exists) {
    throw new ApiError("not_found", `${s.requested} does not exist`, { param: "source" });
  }
  await assertNotAllowedRoot(state, s, "source");
  const isDirectory = s.stat!.isDirectory;
  if (!isDirectory) {
    assertExtensionAllowed(state.policy.upload, basename(d.requested), "destination");
  }
  if (d.ancestor.path !== dirname(d.path)) {
    throw new ApiError("not_found", `The parent of ${d.requested} does not exist`, {
      param: "destination",
    });
  }
  if (d.path === s.path) return c.json({ source: s.requested, destination: d.requested });
  if (isDirectory && isWithin(d.path, s.path)) {
    throw new ApiError("invalid_arguments", "A directory cannot be moved into itself", {
      param: "destination",
    });
  }
  if (d.exists && !body.overwrite) {
    throw new ApiError("file_exists", `${d.requested} exists and overwrite is false`, {
      param: "destination",
    });
  }
  if (isDirectory) await assertTreeRemovable(state.policy.paths, s.requested, s.path, "source");
  await assertUnchanged(s, "source");
  await moveEntry(s.path, d.path, {
    directory: isDirectory,
    overwrite: body.overwrite,
    noSymlinks: state.policy.paths.symlinks !== "allow",
  });
  return c.json({ source: s.requested, destination: d.requested });
}
