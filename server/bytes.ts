/**
 * Joining byte chunks: the server's output buffers, event streams and multipart reader each
 * gather chunks that must go on as one.
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
