/**
 * A ustar writer, just enough for what the engine takes as a tar stream: a build context and the
 * files put into a container before it starts. Directories and regular files only; names up to
 * 255 bytes (split into ustar's prefix and name).
 *
 * @module
 */

/** One entry. */
export interface TarEntry {
  /** The path inside the archive, relative (`a/b.txt`); a directory ends with `/`. */
  name: string;
  /** The file's bytes (omit for a directory). */
  data?: Uint8Array;
  /** Permission bits (default 0644 for files, 0755 for directories). */
  mode?: number;
}

const encoder = new TextEncoder();

function field(header: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = encoder.encode(value);
  if (bytes.length > length) throw new Error(`tar: "${value}" does not fit in ${length} bytes`);
  header.set(bytes, offset);
}

function octal(value: number, length: number): string {
  return value.toString(8).padStart(length - 1, "0") + "\0";
}

function splitName(name: string): [string, string] {
  if (encoder.encode(name).length <= 100) return ["", name];
  for (let at = name.indexOf("/"); at > 0; at = name.indexOf("/", at + 1)) {
    const prefix = name.slice(0, at);
    const rest = name.slice(at + 1);
    if (encoder.encode(prefix).length <= 155 && encoder.encode(rest).length <= 100) {
      return [prefix, rest];
    }
  }
  throw new Error(`tar: the name ${name} is too long`);
}

/**
 * The archive of `entries`, uncompressed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tarArchive } from "./tar.ts";
 * const tar = tarArchive([{ name: "Dockerfile", data: new TextEncoder().encode("FROM x\n") }]);
 * assert.equal(tar.length, 512 * 2 + 1024); // a header, one data block, two end blocks
 * assert.equal(new TextDecoder().decode(tar.subarray(0, 10)), "Dockerfile");
 * ```
 */
export function tarArchive(entries: readonly TarEntry[]): Uint8Array {
  const blocks: Uint8Array[] = [];
  let total = 0;
  for (const entry of entries) {
    const dir = entry.name.endsWith("/");
    const data = dir ? new Uint8Array(0) : entry.data ?? new Uint8Array(0);
    const header = new Uint8Array(512);
    const [prefix, name] = splitName(entry.name);
    field(header, 0, 100, name);
    field(header, 100, 8, octal(entry.mode ?? (dir ? 0o755 : 0o644), 8));
    field(header, 108, 8, octal(0, 8));
    field(header, 116, 8, octal(0, 8));
    field(header, 124, 12, octal(data.length, 12));
    field(header, 136, 12, octal(Math.floor(Date.now() / 1000), 12));
    field(header, 148, 8, "        ");
    field(header, 156, 1, dir ? "5" : "0");
    field(header, 257, 6, "ustar\0");
    field(header, 263, 2, "00");
    field(header, 345, 155, prefix);
    let sum = 0;
    for (const b of header) sum += b;
    field(header, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
    blocks.push(header);
    total += 512;
    if (data.length > 0) {
      const padded = new Uint8Array(Math.ceil(data.length / 512) * 512);
      padded.set(data);
      blocks.push(padded);
      total += padded.length;
    }
  }
  const out = new Uint8Array(total + 1024);
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
