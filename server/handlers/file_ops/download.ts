/**
 * `files_download` (`GET /files`) and `files_download_legacy` (`GET /download`): a file,
 * streamed from disk, one `Range` honoured.
 *
 * @module
 */

import type { Context } from "hono";
import { basename } from "node:path";
import { ApiError } from "../../errors.ts";
import { assertSameFile, resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { parseRange } from "../../files/range.ts";
import { fileReadStream } from "../../files/read_stream.ts";
import { assertReadableFile, openReadableFile } from "../../files/regular_file.ts";
import type { ServerEnv } from "../../state.ts";

function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * Serve one file: 200 whole, 206 for a satisfiable range, 416 for one past the end.
 */
export async function download(c: Context<ServerEnv>, attachment: boolean): Promise<Response> {
  const g = resolveGuardedPath(c.var.state, c.req.query("path"), "read");
  if (!g.exists) {
    throw new ApiError("not_found", `${g.requested} does not exist`, { param: "path" });
  }
  if (g.stat!.isDirectory) {
    throw new ApiError("invalid_arguments", `${g.requested} is a directory; use files_archive`, {
      param: "path",
    });
  }
  assertReadableFile(g.stat!, g.requested);
  const { file, stat: st } = await openReadableFile(g.path, g.requested);
  try {
    assertSameFile(st, g.stat);
  } catch (e) {
    file.close();
    throw e;
  }
  const size = st.size;
  const headers = new Headers({
    "content-type": "application/octet-stream",
    "accept-ranges": "bytes",
    "etag": `"${st.ino?.toString(36)}-${size.toString(36)}-${
      (st.mtime?.getTime() ?? 0).toString(36)
    }"`,
  });
  if (st.mtime) headers.set("last-modified", st.mtime.toUTCString());
  if (attachment) headers.set("content-disposition", contentDisposition(basename(g.requested)));
  const range = parseRange(c.req.header("range"), size);
  if (range.kind === "unsatisfiable") {
    file.close();
    headers.set("content-range", `bytes */${size}`);
    headers.delete("content-type");
    return new Response(null, { status: 416, headers });
  }
  if (range.kind === "whole") {
    headers.set("content-length", String(size));
    return new Response(size === 0 ? closeAndEmpty(file) : fileReadStream(file, size), {
      status: 200,
      headers,
    });
  }
  const count = range.end - range.start + 1;
  try {
    await file.seek(range.start, Deno.SeekMode.Start);
  } catch (e) {
    file.close();
    throw e;
  }
  headers.set("content-length", String(count));
  headers.set("content-range", `bytes ${range.start}-${range.end}/${size}`);
  return new Response(fileReadStream(file, count), { status: 206, headers });
}

function closeAndEmpty(file: Deno.FsFile): null {
  file.close();
  return null;
}
