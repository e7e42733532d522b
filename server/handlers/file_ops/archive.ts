/**
 * `files_archive` (`GET /files/archive?path=`): a directory (or one file) as a streamed tar.gz.
 *
 * @module
 */

import type { Context } from "hono";
import { basename, join } from "node:path";
import { ApiError } from "../../errors.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { type TarEntry, tarGzStream } from "../../files/tar.ts";
import { walkTree } from "../../files/tree_walk.ts";
import type { ServerEnv } from "../../state.ts";
import { isDeniedEntry } from "./list.ts";

/**
 * Stream the archive; entries denied by `paths.deny` are left out, links are stored as links.
 */
export async function archive(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const g = resolveGuardedPath(state, c.req.query("path"), "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  const top = basename(g.requested) || "root";
  const walk = walkTree(g.path, {
    expect: g.stat,
    maxDepth: Infinity,
    includeRoot: true,
    noSymlinks: state.policy.paths.symlinks !== "allow",
    include: (e) => !isDeniedEntry(state, join(g.requested, e.rel), e.path),
  });
  // The root is checked before the answer starts, so a swap there is a 403, not a cut stream.
  const first = await walk.next();
  async function* named(): AsyncGenerator<TarEntry> {
    if (first.done) return;
    yield { ...first.value, name: top };
    for await (const e of walk) yield { ...e, name: `${top}/${e.rel}` };
  }
  const fileName = `${top}.tar.gz`.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return new Response(tarGzStream(named()), {
    headers: {
      "content-type": "application/gzip",
      "content-disposition": `attachment; filename="${fileName}"; filename*=UTF-8''${
        encodeURIComponent(`${top}.tar.gz`)
      }`,
    },
  });
}
