/**
 * A small streaming tar writer (POSIX ustar, with pax extended headers for names and link
 * targets that do not fit or are not ASCII, and for sizes over 8 GiB), gzipped by the
 * platform's `CompressionStream`. The archive is produced as the client reads it: one file is
 * open at a time, read in chunks, never held whole.
 *
 * @module
 */

import { openWalked, type WalkEntry } from "./tree_walk.ts";

const BLOCK = 512;
const CHUNK = 64 * 1024;
const encoder = new TextEncoder();

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function fitsUstar(text: string, max: number): boolean {
  // deno-lint-ignore no-control-regex
  return /^[\x01-\x7f]*$/.test(text) && text.length <= max;
}

function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = encoder.encode(body).length;
  // The length prefix counts its own digits.
  let len = bodyBytes + 1;
  while (String(len).length + bodyBytes !== len) len = String(len).length + bodyBytes;
  return encoder.encode(`${len}${body}`);
}

function header(
  name: string,
  fields: { mode: number; size: number; mtime: number; type: string; linkname?: string },
): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const put = (text: string, offset: number, width: number) => {
    h.set(encoder.encode(text).subarray(0, width), offset);
  };
  put(name, 0, 100);
  put(octal(fields.mode & 0o7777, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(fields.size, 12), 124, 12);
  put(octal(Math.max(0, Math.floor(fields.mtime)), 12), 136, 12);
  put("        ", 148, 8);
  put(fields.type, 156, 1);
  put(fields.linkname ?? "", 157, 100);
  put("ustar\0", 257, 6);
  put("00", 263, 2);
  let sum = 0;
  for (const b of h) sum += b;
  put(octal(sum, 7), 148, 7);
  return h;
}

function padding(size: number): Uint8Array {
  const rest = size % BLOCK;
  return new Uint8Array(rest === 0 ? 0 : BLOCK - rest);
}

/** The header block(s) of one entry: a pax header first when ustar cannot hold it. */
function headersFor(entry: TarEntry, linkname: string | undefined): Uint8Array[] {
  const st = entry.stat;
  const type = st.kind === "directory" ? "5" : st.kind === "symlink" ? "2" : "0";
  const name = st.kind === "directory" ? `${entry.name}/` : entry.name;
  const size = type === "0" ? st.size : 0;
  const mtime = (st.mtime?.getTime() ?? 0) / 1000;
  const pax: Uint8Array[] = [];
  if (!fitsUstar(name, 100)) pax.push(paxRecord("path", name));
  if (linkname !== undefined && !fitsUstar(linkname, 100)) {
    pax.push(paxRecord("linkpath", linkname));
  }
  if (size > 0o77777777777) pax.push(paxRecord("size", String(size)));
  const out: Uint8Array[] = [];
  if (pax.length > 0) {
    const total = pax.reduce((n, r) => n + r.length, 0);
    const data = new Uint8Array(total);
    let off = 0;
    for (const r of pax) {
      data.set(r, off);
      off += r.length;
    }
    const paxName = `PaxHeader/${name.replace(/[^\x20-\x7e]/g, "_").slice(-80)}`;
    out.push(header(paxName, { mode: 0o644, size: total, mtime, type: "x" }), data, padding(total));
  }
  const shortName = fitsUstar(name, 100) ? name : name.replace(/[^\x20-\x7e]/g, "_").slice(-100);
  const shortLink = linkname === undefined
    ? undefined
    : fitsUstar(linkname, 100)
    ? linkname
    : linkname.slice(0, 100);
  out.push(
    header(shortName, {
      mode: st.mode,
      size: size > 0o77777777777 ? 0 : size,
      mtime,
      type,
      linkname: shortLink,
    }),
  );
  return out;
}

/**
 * The bytes of a walked file, exactly `size` of them: cut if it grew, zero-filled if it shrank
 * or if the path no longer leads to the file walked (a swapped link is never followed).
 */
async function* fileBytes(entry: WalkEntry, size: number): AsyncGenerator<Uint8Array> {
  const file = await openWalked(entry);
  if (!file) {
    yield new Uint8Array(size); // Keep the archive valid; the header is already out.
    return;
  }
  try {
    let left = size;
    const buf = new Uint8Array(CHUNK);
    while (left > 0) {
      const n = await file.read(buf.subarray(0, Math.min(CHUNK, left)));
      if (n === null) {
        yield new Uint8Array(left);
        return;
      }
      left -= n;
      yield buf.slice(0, n);
    }
  } finally {
    file.close();
  }
}

/** One entry of the archive: a walked entry and its name inside the archive. */
export interface TarEntry extends WalkEntry {
  /** The name inside the archive (`dir/sub/file`). */
  name: string;
}

/**
 * The uncompressed tar bytes of some entries, produced as they are read.
 *
 * @example Archiving a walked tree
 * ```ts
 * import assert from "node:assert/strict";
 * import { tarBytes } from "./tar.ts";
 * import { walkTree } from "./tree_walk.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/a.txt`, "hi");
 * async function* entries() {
 *   const walked = walkTree(dir, { maxDepth: 1, noSymlinks: true });
 *   for await (const e of walked) yield { ...e, name: e.rel };
 * }
 * const tar = await new Response(ReadableStream.from(tarBytes(entries()))).bytes();
 * assert.equal(new TextDecoder().decode(tar.subarray(0, 5)), "a.txt"); // the first header's name
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function* tarBytes(entries: AsyncIterable<TarEntry>): AsyncGenerator<Uint8Array> {
  for await (const entry of entries) {
    const st = entry.stat;
    if (st.kind === "other") continue; // sockets, FIFOs, devices
    // A file with several names may be one outside the tree (see `regular_file.ts`).
    if (st.kind === "file" && st.nlink > 1) continue;
    if (st.kind === "symlink" && entry.linkTarget === null) continue;
    for (const block of headersFor(entry, entry.linkTarget ?? undefined)) yield block;
    if (st.kind === "file" && st.size > 0) {
      yield* fileBytes(entry, st.size);
      yield padding(st.size);
    }
  }
  yield new Uint8Array(BLOCK * 2);
}

/**
 * A `.tar.gz` stream of some entries. Cancelling it (the client went away) closes the open file.
 */
export function tarGzStream(entries: AsyncIterable<TarEntry>): ReadableStream<Uint8Array> {
  const gzip = new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>;
  return ReadableStream.from(tarBytes(entries)).pipeThrough(gzip);
}
