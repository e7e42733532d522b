/**
 * The one error type the host raises. Every failure carries a `code` a caller can branch on and a
 * message that names the engine and, when the process is involved, quotes its stderr tail.
 *
 * @module
 */
import type { ErrorCode } from "./types.ts";

/**
 * Why a host call failed: the engine's own error codes passed through, or one of the host's.
 */
export type EngineErrorCode =
  | ErrorCode
  | "spawn"
  | "refused"
  | "protocol"
  | "exited"
  | "deadline"
  | "timeout"
  | "cancelled"
  | "closed"
  | "invalid"
  | "manifest";

/**
 * A failure of the host or of the engine behind it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EngineError } from "./mod.ts";
 * const error = new EngineError("deadline", "explorer", "the deadline passed");
 * assert.equal(error.code, "deadline");
 * assert.equal(error.message, 'engine "explorer": the deadline passed');
 * ```
 */
export class EngineError extends Error {
  /** What kind of failure this is. */
  readonly code: EngineErrorCode;
  /** The manifest name of the engine concerned. */
  readonly engine: string;

  /** Makes an error; the message is prefixed with the engine's name. */
  constructor(code: EngineErrorCode, engine: string, message: string, options?: ErrorOptions) {
    super(`engine "${engine}": ${message}`, options);
    this.name = "EngineError";
    this.code = code;
    this.engine = engine;
  }
}
