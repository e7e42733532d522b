/**
 * The one-range subset of HTTP `Range` (RFC 9110 §14): `bytes=a-b`, `bytes=a-`, `bytes=-n`.
 * Several ranges, other units and malformed headers are ignored (the whole file is sent), as the
 * RFC allows; a well-formed range past the end cannot be satisfied (416).
 *
 * @module
 */

/** What to send for a `Range` header. */
export type RangeAnswer =
  | { kind: "whole" }
  | { kind: "partial"; start: number; end: number }
  | { kind: "unsatisfiable" };

/**
 * Decide the bytes to send of a file of `size` bytes.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRange } from "./range.ts";
 * assert.deepEqual(parseRange("bytes=0-99", 1000), { kind: "partial", start: 0, end: 99 });
 * assert.deepEqual(parseRange("bytes=-10", 1000), { kind: "partial", start: 990, end: 999 });
 * ```
 */
export function parseRange(header: string | null | undefined, size: number): RangeAnswer {
  if (!header) return { kind: "whole" };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === "" && m[2] === "")) return { kind: "whole" };
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  let end = m[2] === "" ? Infinity : Number(m[2]);
  if (!Number.isSafeInteger(start) || end < start) return { kind: "whole" };
  if (start >= size) return { kind: "unsatisfiable" };
  end = Math.min(end, size - 1);
  return { kind: "partial", start, end };
}
