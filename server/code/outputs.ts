/**
 * A context's outputs directory: files a run writes there come back in its `output_files`
 * (name, path, size, MIME type), found by comparing the directory before and after the run.
 *
 * @module
 */

import { extname, join, relative } from "node:path";

/** The contract's output file record, as the wire names it. */
export interface OutputFileRecord {
  /** Path relative to the outputs directory. */
  name: string;
  /** Absolute path. */
  path: string;
  /** Bytes. */
  size: number;
  /** From the extension; `application/octet-stream` when unknown. */
  mime_type: string;
}

/** Files looked at per snapshot: a run that writes more reports the first ones. */
const MAX_FILES = 1000;

const MIME: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".svg": "image/svg+xml",
  ".pdf": "application/pdf",
  ".json": "application/json",
  ".csv": "text/csv",
  ".tsv": "text/tab-separated-values",
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".html": "text/html",
  ".htm": "text/html",
  ".xml": "application/xml",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".tar": "application/x-tar",
  ".parquet": "application/vnd.apache.parquet",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".mp4": "video/mp4",
  ".wav": "audio/wav",
  ".mp3": "audio/mpeg",
};

/** The MIME type of a file name, by its extension. */
export function mimeType(name: string): string {
  return MIME[extname(name).toLowerCase()] ?? "application/octet-stream";
}

/** Size and modification time of every regular file under `dir`, by absolute path. */
export type Snapshot = Map<string, { size: number; mtime: number }>;

/** Look at `dir` (missing: empty). Symbolic links are not followed. */
export async function snapshot(dir: string): Promise<Snapshot> {
  const seen: Snapshot = new Map();
  const walk = async (d: string): Promise<void> => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(d));
    } catch {
      return;
    }
    for (const e of entries) {
      if (seen.size >= MAX_FILES) return;
      const path = join(d, e.name);
      if (e.isDirectory) await walk(path);
      else if (e.isFile) {
        const st = await Deno.lstat(path).catch(() => null);
        if (st) seen.set(path, { size: st.size, mtime: st.mtime?.getTime() ?? 0 });
      }
    }
  };
  await walk(dir);
  return seen;
}

/** The files of `after` that are new or changed since `before`, sorted by name. */
export function changedFiles(dir: string, before: Snapshot, after: Snapshot): OutputFileRecord[] {
  const out: OutputFileRecord[] = [];
  for (const [path, st] of after) {
    const old = before.get(path);
    if (old && old.size === st.size && old.mtime === st.mtime) continue;
    const name = relative(dir, path);
    out.push({ name, path, size: st.size, mime_type: mimeType(name) });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}
