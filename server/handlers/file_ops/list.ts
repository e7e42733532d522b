/**
 * `files_list` (`GET /files/list`) and `files_stat` (`GET /files/stat`).
 *
 * @module
 */

import type { Context } from "hono";
import { join } from "node:path";
import { ApiError } from "../../errors.ts";
import { deniedBy } from "../../guards/paths/index.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { describePath, type FileInfo } from "../../files/info.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import { queryInt } from "./params.ts";

/** The deepest `depth` a listing accepts. */
export const MAX_LIST_DEPTH = 16;

/** Whether an entry (by its shown and its real path) is hidden by `paths.deny`. */
export function isDeniedEntry(state: ServerState, shown: string, real: string): boolean {
  const deny = state.policy.paths.deny;
  return deny.length > 0 &&
    (deniedBy(shown, deny) !== undefined || deniedBy(real, deny) !== undefined);
}

/** The entries of one directory, described; links are described, never descended. */
async function entriesOf(
  state: ServerState,
  shownDir: string,
  realDir: string,
): Promise<{ info: FileInfo; real: string }[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(realDir)) names.push(e.name);
  const out: { info: FileInfo; real: string }[] = [];
  for (const name of names) {
    const shown = join(shownDir, name);
    const real = join(realDir, name);
    if (isDeniedEntry(state, shown, real)) continue;
    let st: Deno.FileInfo;
    try {
      // Synchronous on purpose: one lstat is microseconds, and a pool round trip per entry
      // would make a 10,000-entry listing several times slower.
      st = Deno.lstatSync(real);
    } catch {
      continue; // Vanished since readDir.
    }
    out.push({ info: await describePath(state, shown, real, st), real });
  }
  return out;
}

/**
 * `GET /files/list?path=&depth=`.
 *
 * @example
 * ```ts ignore
 * files_list: listDirectory,
 * ```
 */
export async function listDirectory(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const depth = queryInt(c, "depth", 1, 1, MAX_LIST_DEPTH);
  const g = await resolveGuardedPath(state, c.req.query("path"), "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  if (!g.stat!.isDirectory) {
    throw new ApiError("invalid_arguments", `${g.requested} is not a directory`, { param: "path" });
  }
  const entries: FileInfo[] = [];
  let level = [{ shown: g.requested, real: g.path }];
  for (let d = 1; d <= depth && level.length > 0; d++) {
    const next: { shown: string; real: string }[] = [];
    for (const dir of level) {
      let found: { info: FileInfo; real: string }[];
      try {
        found = await entriesOf(state, dir.shown, dir.real);
      } catch (e) {
        if (d === 1) throw e;
        continue; // A subdirectory that vanished or cannot be read.
      }
      for (const { info, real } of found) {
        entries.push(info);
        if (info.type === "directory" && !info.symlink) next.push({ shown: info.path, real });
      }
    }
    level = next;
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return c.json({ path: g.requested, entries });
}

/**
 * `GET /files/stat?path=`.
 *
 * @example
 * ```ts ignore
 * files_stat: statPath,
 * ```
 */
export async function statPath(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  // The followed check refuses a link whose target is not allowed; the second look describes
  // the link itself, so `symlink` and `symlink_target` are reported.
  const target = await resolveGuardedPath(state, c.req.query("path"), "read");
  if (!target.exists) {
    throw new ApiError("not_found", `${target.requested} does not exist`, { param: "path" });
  }
  const g = await resolveGuardedPath(state, c.req.query("path"), "read", "path", {
    followFinal: false,
  });
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  return c.json(await describePath(state, g.requested, g.path, g.stat!));
}
