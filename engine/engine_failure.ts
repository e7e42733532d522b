/**
 * The errors an engine's handler throws to choose its error response's code.
 *
 * @module
 */
import type { ErrorCode } from "./types.ts";

/**
 * An error a handler throws to answer with a given code; any other error answers `internal`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EngineFailure } from "./mod.ts";
 * const failure = new EngineFailure("unsupported", "free inputs are not taken");
 * assert.equal(failure.code, "unsupported");
 * assert.equal(failure.message, "free inputs are not taken");
 * ```
 */
export class EngineFailure extends Error {
  /** The error code the engine answers with. */
  readonly code: ErrorCode;
  /** Makes a failure with `code`. */
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "EngineFailure";
    this.code = code;
  }
}

/**
 * Thrown by a handler when a bound is exhausted; answers with error `budget`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BudgetExhausted, EngineFailure } from "./mod.ts";
 * const failure = new BudgetExhausted("memory bound of 64 MiB exhausted");
 * assert.ok(failure instanceof EngineFailure);
 * assert.equal(failure.code, "budget");
 * ```
 */
export class BudgetExhausted extends EngineFailure {
  /** Makes a `budget` failure. */
  constructor(message: string) {
    super("budget", message);
    this.name = "BudgetExhausted";
  }
}
