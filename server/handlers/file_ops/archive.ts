/**
 * `files_archive` (`GET /files/archive?path=`): a directory (or one file) as a streamed tar.gz.
 *
 * @module
 */

import type { Context } from "hono";
import { basename, dirname, join } from "node:path";
import { ApiError } from "../../errors.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { tarGzStream, walkForTar } from "../../files/tar.ts";
import type { ServerEnv } from "../../state.ts";
import { isDeniedEntry } from "./list.ts";

/**
 * Stream the archive; entries denied by `paths.deny` are left out, links are stored as links.
 *
 * @example
 * ```ts ignore
 * files_archive: archive,
 * ```
 */
export async function archive(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const g = await resolveGuardedPath(state, c.req.query("path"), "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  const top = basename(g.requested) || "root";
  const shownBase = dirname(g.requested);
  const include = (real: string, name: string) =>
    !isDeniedEntry(state, join(shownBase, name), real);
  const fileName = `${top}.tar.gz`.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return new Response(tarGzStream(walkForTar(g.path, top, include)), {
    headers: {
      "content-type": "application/gzip",
      "content-disposition": `attachment; filename="${fileName}"; filename*=UTF-8''${
        encodeURIComponent(`${top}.tar.gz`)
      }`,
    },
  });
}
