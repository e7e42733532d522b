/**
 * `files_search` (`POST /files/search`).
 *
 * @module
 */

import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../errors.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { searchTree } from "../../files/search.ts";
import type { ServerEnv } from "../../state.ts";
import { isDeniedEntry } from "./list.ts";
import { readBody } from "../../request_reader.ts";

const searchBody = z.strictObject({
  path: z.unknown(),
  pattern: z.string().min(1).max(1024).optional(),
  content: z.string().min(1).max(4096).optional(),
  regex: z.boolean().default(false),
  case_sensitive: z.boolean().default(true),
  max_results: z.number().int().min(1).max(10_000).default(1000),
  max_depth: z.number().int().min(1).max(64).default(32),
  timeout_ms: z.number().int().min(1).max(60_000).default(10_000),
  max_file_bytes: z.number().int().min(0).max(1024 * 1024 * 1024).default(10 * 1024 * 1024),
  include_hidden: z.boolean().default(true),
});

/**
 * Search a directory by name glob, by content, or both.
 */
export async function search(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const body = await readBody(c, searchBody);
  if (body.pattern === undefined && body.content === undefined) {
    throw new ApiError("invalid_arguments", "Give a pattern, a content, or both", {
      param: "pattern",
    });
  }
  if (body.regex && body.content !== undefined) {
    try {
      new RegExp(body.content);
    } catch (e) {
      throw new ApiError("invalid_arguments", `content: ${(e as Error).message}`, {
        param: "content",
      });
    }
  }
  const g = resolveGuardedPath(state, body.path, "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  if (!g.stat!.isDirectory) {
    throw new ApiError("invalid_arguments", `${g.requested} is not a directory`, { param: "path" });
  }
  const result = await searchTree(
    g.path,
    g.requested,
    {
      pattern: body.pattern,
      content: body.content,
      regex: body.regex,
      caseSensitive: body.case_sensitive,
      maxResults: body.max_results,
      maxDepth: body.max_depth,
      timeoutMs: body.timeout_ms,
      maxFileBytes: body.max_file_bytes,
      includeHidden: body.include_hidden,
    },
    (shown, real) => isDeniedEntry(state, shown, real),
    state.policy.paths.symlinks !== "allow",
    g.stat,
  );
  return c.json({ path: g.requested, ...result });
}
