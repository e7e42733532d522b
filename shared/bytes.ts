/**
 * Joining byte chunks and decoding a cut tail: the output buffers, the event streams and the
 * multipart reader each gather chunks that must go on as one.
 *
 * @module
 */

/**
 * `parts` as one array (`size`, their total length, when the caller already counts it). A single
 * part is returned as it is, not copied.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { concatBytes } from "./bytes.ts";
 * const joined = concatBytes([new Uint8Array([1, 2]), new Uint8Array([3])]);
 * assert.deepEqual([...joined], [1, 2, 3]);
 * ```
 */
export function concatBytes(
  parts: readonly Uint8Array[],
  size = parts.reduce((n, p) => n + p.byteLength, 0),
): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

const decoder = new TextDecoder();

/**
 * Decode bytes cut at an arbitrary point: continuation bytes at the cut are skipped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeTail } from "./bytes.ts";
 * const bytes = new TextEncoder().encode("é!");
 * assert.equal(decodeTail(bytes.subarray(1)), "!");
 * ```
 */
export function decodeTail(bytes: Uint8Array): string {
  let start = 0;
  while (start < bytes.length && start < 3 && (bytes[start] & 0xc0) === 0x80) start++;
  return decoder.decode(bytes.subarray(start));
}
