/**
 * A timer for any delay. `setTimeout` keeps its delay in a signed 32-bit integer: anything past
 * 2^31-1 ms (about 24.8 days) fires after 1 ms instead, so a deadline a month ahead would expire at
 * once. A long delay here is waited out in chunks below that bound.
 *
 * @module
 */

/** The longest delay `setTimeout` honours. */
const MAX_DELAY = 2 ** 31 - 1;

/** Stops a timer made by {@link setLongTimeout}; safe to call more than once. */
export type ClearLongTimeout = () => void;

/**
 * Calls `fn` once, `ms` milliseconds from now, however far ahead that is (a negative or NaN delay
 * fires at once, as `setTimeout` does). Returns the function that stops it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { setLongTimeout } from "./long_timer.ts";
 *
 * let fired = false;
 * const stop = setLongTimeout(() => fired = true, 40 * 24 * 3600 * 1000); // 40 days
 * await new Promise((resolve) => setTimeout(resolve, 10));
 * assert.equal(fired, false); // a bare setTimeout would have fired after 1 ms
 * stop();
 * ```
 */
export function setLongTimeout(fn: () => void, ms: number): ClearLongTimeout {
  const due = Date.now() + (Number.isFinite(ms) ? Math.max(0, ms) : 0);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    const left = due - Date.now();
    timer = left > MAX_DELAY ? setTimeout(arm, MAX_DELAY) : setTimeout(fn, Math.max(0, left));
  };
  arm();
  return () => clearTimeout(timer);
}
