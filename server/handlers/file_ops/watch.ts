/**
 * `files_watch` (`GET /files/watch?path=&recursive=`): an NDJSON stream of changes.
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { WatcherRegistry } from "../../files/watcher.ts";
import type { ServerEnv } from "../../state.ts";
import { isDeniedEntry } from "./list.ts";
import { queryBool } from "../../request_reader.ts";

/**
 * Watch a directory or a file until the client goes away.
 */
export async function watch(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const recursive = queryBool(c, "recursive", true);
  const g = resolveGuardedPath(state, c.req.query("path"), "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  const registry = state.service("file_watchers", () => new WatcherRegistry());
  const stream = await registry.open({
    real: g.path,
    shown: g.requested,
    recursive,
    hide: (shown, real) => isDeniedEntry(state, shown, real),
    signal: c.req.raw.signal,
    noSymlinks: state.policy.paths.symlinks !== "allow",
  });
  return new Response(stream, {
    headers: {
      "content-type": "application/x-ndjson",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}
