/**
 * A cpio archive in the kernel's `newc` format, the format of an initramfs, written from memory.
 *
 * Written here rather than with GNU `cpio`: the archive needs a `/dev/console` device node (the
 * kernel opens it for the first process before anything can mount `/dev`), which `cpio -o` can
 * only copy from a node made with `mknod` in a staging directory; the format is thirteen hex
 * fields per entry, and no npm package writes it.
 *
 * @module
 */

/** One member of the archive. */
export type CpioEntry =
  | { kind: "dir"; path: string; mode?: number }
  | { kind: "file"; path: string; data: Uint8Array; mode?: number }
  | { kind: "symlink"; path: string; target: string }
  | { kind: "char"; path: string; major: number; minor: number; mode?: number };

const TYPE = { dir: 0o040000, file: 0o100000, symlink: 0o120000, char: 0o020000 } as const;
const DEFAULT_MODE = { dir: 0o755, file: 0o644, symlink: 0o777, char: 0o600 } as const;

function hex(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/** Bytes to add after `length` bytes so the next field starts on a 4-byte boundary. */
function pad(length: number): Uint8Array {
  return new Uint8Array((4 - (length % 4)) % 4);
}

/**
 * The archive of `entries` (parents before their children), with the `TRAILER!!!` that ends it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cpioNewc } from "./cpio.ts";
 * const archive = cpioNewc([{ kind: "file", path: "init", data: new TextEncoder().encode("x") }]);
 * const text = new TextDecoder().decode(archive);
 * assert.ok(text.startsWith("070701"));
 * assert.ok(text.includes("init\0"));
 * assert.ok(text.includes("TRAILER!!!\0"));
 * assert.equal(archive.length % 4, 0);
 * ```
 */
export function cpioNewc(entries: CpioEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const encoder = new TextEncoder();
  let ino = 1;
  const add = (
    name: string,
    mode: number,
    data: Uint8Array,
    device: [number, number] = [0, 0],
  ) => {
    const nameBytes = encoder.encode(`${name}\0`);
    const header = "070701" +
      [ino++, mode, 0, 0, 1, 0, data.length, 0, 0, device[0], device[1], nameBytes.length, 0]
        .map(hex).join("");
    parts.push(encoder.encode(header), nameBytes, pad(110 + nameBytes.length), data);
    parts.push(pad(data.length));
  };
  for (const e of entries) {
    const path = e.path.replace(/^\/+/, "");
    const perm = "mode" in e && e.mode !== undefined ? e.mode : DEFAULT_MODE[e.kind];
    const mode = TYPE[e.kind] | perm;
    if (e.kind === "file") add(path, mode, e.data);
    else if (e.kind === "symlink") add(path, mode, encoder.encode(e.target));
    else if (e.kind === "char") add(path, mode, new Uint8Array(), [e.major, e.minor]);
    else add(path, mode, new Uint8Array());
  }
  add("TRAILER!!!", 0, new Uint8Array());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
