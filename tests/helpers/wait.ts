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

/**
 * Read `read` until it gives the same answer (by `JSON.stringify`) `times` times in a row,
 * `intervalMs` apart, and return it: the state of a process after its own background work (a
 * thread the server starts at listen, say) has settled, taken as a baseline.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { settled } from "./wait.ts";
 * let n = 0;
 * assert.equal(await settled("n stops at 3", () => Math.min(++n, 3), 3, 1), 3);
 * ```
 */
export async function settled<T>(
  what: string,
  read: () => T | Promise<T>,
  times = 4,
  intervalMs = 100,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last = JSON.stringify(await read());
  let same = 1;
  while (same < times) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
    const value = await read();
    const text = JSON.stringify(value);
    same = text === last ? same + 1 : 1;
    last = text;
    if (same >= times) return value;
  }
  return JSON.parse(last);
}
