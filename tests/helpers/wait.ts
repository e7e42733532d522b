/**
 * Waiting in tests for something another process does: poll a check until it holds, or fail
 * with what was awaited. One helper for every test file, so the argument order is the same
 * everywhere: what is awaited first, then the check.
 *
 * @module
 */

/**
 * Poll `check` until it returns a truthy value, and return that value; throw
 * `timed out waiting until <what>` after `ms`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { eventually } from "./wait.ts";
 * let n = 0;
 * const seen = await eventually("n passes 2", () => ++n > 2 && n);
 * assert.equal(seen, 3);
 * ```
 */
export async function eventually<T>(
  what: string,
  check: () => T | Promise<T>,
  ms = 20_000,
  intervalMs = 25,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  while (true) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
