/**
 * The nearest known name to a mistyped one, for every "did you mean" of the server, the SDK and
 * the engine: one distance and one threshold, so a typo gets the same suggestion wherever it is
 * made. It lives in `shared/` (leaves that import nothing of `server/`, `sdk/` or `engine/`), so
 * the SDK and the engine use it without importing the server.
 *
 * The distance is optimal string alignment (insert, delete, replace, and a swap of two
 * neighbouring letters counting as one edit, since swaps are the commonest typo), without regard
 * to case. A name is suggested when at most a third of the typed name's letters (and at least
 * one) differ, or when one contains the other and both have three letters or more (`timeout` for
 * `httpTimeout`); otherwise there is no suggestion, since a far-fetched one misleads more than
 * none.
 *
 * @module
 */

/**
 * Edit distance of two names, case-insensitive, a swap of neighbours counting as one edit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { editDistance } from "./nearest_name.ts";
 * assert.equal(editDistance("pahts", "paths"), 1);
 * assert.equal(editDistance("Timeout", "timeouts"), 1);
 * assert.equal(editDistance("", "abc"), 3);
 * ```
 */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/**
 * The known name closest to `name` when it is close enough to be a likely typo (see the module
 * doc for the threshold), else `undefined`. Ties go to the first in `known`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nearestName } from "./nearest_name.ts";
 * assert.equal(nearestName("pahts", ["paths", "depth"]), "paths");
 * assert.equal(nearestName("timeout", ["httpTimeout", "metadata"]), "httpTimeout");
 * assert.equal(nearestName("Europe/Berln", ["Europe/Berlin", "Europe/Bern"]), "Europe/Berlin");
 * assert.equal(nearestName("colour", ["path", "depth"]), undefined);
 * ```
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(name.length / 3));
  for (const k of known) {
    const d = editDistance(name, k);
    if (d <= bestDistance && (best === undefined || d < bestDistance)) {
      best = k;
      bestDistance = d;
    }
  }
  if (best !== undefined) return best;
  const lower = name.toLowerCase();
  if (lower.length < 3) return undefined;
  return known.find((k) => {
    const other = k.toLowerCase();
    return other.length >= 3 && (lower.includes(other) || other.includes(lower));
  });
}
