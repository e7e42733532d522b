/**
 * Turning what puppeteer throws into the contract's errors: a timeout is `timeout` (504), a
 * browser that went away is `internal` with a message saying the next request starts a new
 * one, and anything else passes through for the operation to classify.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/**
 * True when an error says the browser, the page or its connection went away (Chromium exited,
 * crashed or was killed), as opposed to an error of the operation itself.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { isBrowserGone } from "./failures.ts";
 * assert.equal(isBrowserGone(new Error("Protocol error (Page.navigate): Target closed")), true);
 * assert.equal(isBrowserGone(new Error("Timeout 30000ms exceeded")), false);
 * ```
 */
export function isBrowserGone(e: unknown): boolean {
  const message = e instanceof Error ? e.message : String(e);
  return /Target closed|Session closed|Connection closed|browser has disconnected|Navigating frame was detached|Protocol error.*(closed|detached)|the browser session ended|Page crashed/i
    .test(message);
}

/** The error for a browser that went away during an operation. */
export function browserGoneError(e: unknown): ApiError {
  return new ApiError(
    "internal",
    "Chromium exited or the page crashed during the request; the next request starts a new one",
    { cause: e },
  );
}

/**
 * Map a failure of a page operation: `timeout`, browser gone, or `fallback(e)` for the rest.
 */
export function pageFailure(
  e: unknown,
  timeoutMessage: string,
  fallback: (e: Error) => ApiError | Error = (err) => err,
): Error {
  if (e instanceof ApiError) return e;
  // puppeteer's TimeoutError, by name: the module is loaded lazily (see chromium.ts).
  if (e instanceof Error && e.name === "TimeoutError") {
    return new ApiError("timeout", timeoutMessage, { cause: e });
  }
  if (isBrowserGone(e)) return browserGoneError(e);
  return fallback(e instanceof Error ? e : new Error(String(e)));
}
