/**
 * `files_upload` (`POST /files`) and `files_upload_legacy` (`POST /upload`): a raw body or a
 * multipart form, streamed to disk through the atomic writer, one file at a time.
 *
 * @module
 */

import type { Context } from "hono";
import { basename, dirname, join } from "node:path";
import { ApiError } from "../../errors.ts";
import { assertExtensionAllowed } from "../../guards/paths/extensions.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { writeAtomically } from "../../files/atomic_write.ts";
import { makeDirectories } from "../../files/entry_ops.ts";
import { describeStat, type FileInfo } from "../../files/info.ts";
import { multipartBoundary, readMultipart } from "../../files/multipart.ts";
import type { ServerEnv, ServerState } from "../../state.ts";

const MAX_FIELD_BYTES = 64 * 1024;

function parseOverwrite(raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === "") return fallback;
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  throw new ApiError("invalid_arguments", "overwrite must be true or false", {
    param: "overwrite",
  });
}

async function fieldText(body: ReadableStream<Uint8Array>, name: string): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    text += decoder.decode(chunk, { stream: true });
    if (text.length > MAX_FIELD_BYTES) {
      throw new ApiError("invalid_request", `Form field ${name} is too long`, { param: name });
    }
  }
  return text + decoder.decode();
}

/** A multipart file name as a single path component, or a refusal. */
function safeFileName(name: string): string {
  if (
    name === "" || name === "." || name === ".." || /[/\\\0]/.test(name) ||
    new TextEncoder().encode(name).length > 255
  ) {
    throw new ApiError("invalid_path", `File name ${JSON.stringify(name)} is not a plain name`, {
      param: "filename",
    });
  }
  return name;
}

/**
 * Guard one destination and stream `body` into it.
 */
export async function saveFile(
  state: ServerState,
  raw: unknown,
  body: ReadableStream<Uint8Array>,
  overwrite: boolean,
  expectedBytes?: number,
): Promise<FileInfo> {
  try {
    let g = resolveGuardedPath(state, raw, "write");
    assertExtensionAllowed(state.policy.upload, basename(g.requested));
    if (g.path !== g.requested) assertExtensionAllowed(state.policy.upload, basename(g.path));
    if (g.stat?.isDirectory) {
      throw new ApiError("conflict", `${g.requested} is a directory`, { param: "path" });
    }
    if (g.exists && !overwrite) {
      throw new ApiError("file_exists", `${g.requested} exists and overwrite is false`, {
        param: "path",
      });
    }
    const parent = dirname(g.path);
    if (g.ancestor.path !== parent) {
      await makeDirectories(g.ancestor.path, parent, state.policy.paths.symlinks !== "allow");
      // Whatever happened on disk meanwhile, the write goes where a fresh check says.
      g = resolveGuardedPath(state, raw, "write");
      if (g.ancestor.path !== dirname(g.path)) {
        throw new ApiError("conflict", `The directory of ${g.requested} could not be made`);
      }
    }
    const st = await writeAtomically(g.path, body, {
      overwrite,
      directory: g.ancestor.stat,
      expectedBytes,
      noSymlinks: state.policy.paths.symlinks !== "allow",
    });
    return describeStat(g.requested, st);
  } finally {
    // Refused before reading: the rest of the body is not wanted.
    if (!body.locked) await body.cancel().catch(() => {});
  }
}

/**
 * The upload handler; `legacy` makes `path` default to the root directory.
 */
export async function upload(c: Context<ServerEnv>, legacy: boolean): Promise<Response> {
  const state = c.var.state;
  const request = c.req.raw;
  let path: string | undefined = c.req.query("path");
  const overwriteQuery = c.req.query("overwrite");
  let overwrite = parseOverwrite(overwriteQuery, true);
  const boundary = multipartBoundary(c.req.header("content-type") ?? null);
  const body = request.body ?? new ReadableStream<Uint8Array>({ start: (ctl) => ctl.close() });
  if (boundary === null) {
    const declared = c.req.header("content-length");
    const info = await saveFile(
      state,
      path,
      body,
      overwrite,
      declared === undefined ? undefined : Number(declared),
    );
    return c.json({ files: [info] });
  }
  const files: FileInfo[] = [];
  for await (const part of readMultipart(body, boundary)) {
    if (part.filename === null) {
      if (part.name === "path" && path === undefined && files.length === 0) {
        path = await fieldText(part.body, "path");
      } else if (part.name === "overwrite" && overwriteQuery === undefined) {
        overwrite = parseOverwrite(await fieldText(part.body, "overwrite"), true);
      }
      continue;
    }
    const base = path ?? (legacy ? state.root : undefined);
    if (base === undefined) {
      throw new ApiError("invalid_path", "Path is missing", { param: "path" });
    }
    let intoDirectory = base.endsWith("/");
    if (!intoDirectory) {
      const g = resolveGuardedPath(state, base, "write");
      intoDirectory = g.stat?.isDirectory ?? false;
    }
    let destination = base;
    if (intoDirectory) destination = join(base, safeFileName(part.filename));
    else if (files.length > 0) {
      throw new ApiError(
        "invalid_request",
        "Several file parts need a directory as path",
        { param: "path" },
      );
    }
    files.push(await saveFile(state, destination, part.body, overwrite));
  }
  if (files.length === 0) throw new ApiError("invalid_request", "The form has no file part");
  return c.json({ files });
}
