/**
 * External Engine Protocol v1: a host that runs analysis engines as child processes and decides
 * what stands of their claims, and `serveEngine` to write such an engine in a few lines.
 *
 * The engine only claims a strength; {@linkcode adjudicate} decides what stands, which is what
 * `EngineHost.run` returns beside each result (`docs/engine.md` shows a host and an engine):
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { adjudicate } from "@sandbar/sandbar/engine";
 * const verdict = adjudicate(
 *   { claim: "violated", strength: "proved" },
 *   { question: "holds", authority: "proved", witness: "schedule" },
 * );
 * assert.equal(verdict.strength, "observed");
 * assert.equal(verdict.reason, "claim violated needs a witness; there is none");
 * ```
 *
 * @module
 */
export { EngineHost, type HostOptions, type RunOptions, type RunOutcome } from "./engine_host.ts";
export {
  type EngineEntry,
  loadManifest,
  type Manifest,
  manifestEntry,
  parseManifest,
  SERVED_MODEL_FORMS,
} from "./manifest.ts";
export { EngineError, type EngineErrorCode } from "./errors.ts";
export type { Diagnostic } from "./rpc_client.ts";
export { descriptionMismatches, SERVED_PROTOCOLS } from "./handshake.ts";
export { adjudicate, ADMITTED_CLAIMS, type Verdict, type VerdictContext } from "./verdict.ts";
export {
  formatSchedule,
  type Move,
  type ParsedSchedule,
  parseSchedule,
  type Step,
} from "./replay.ts";
export { parseRfc3339 } from "./rfc3339.ts";
export { serveEngine, type ServeOptions } from "./serve_engine.ts";
export type { EngineHandlers, RunContext, RunRequest } from "./dispatcher.ts";
export { BudgetExhausted, EngineFailure } from "./engine_failure.ts";
export {
  BOUND_NAMES,
  CLAIMS,
  DRAW_MODES,
  ERROR_CODES,
  FREE_PARTS,
  MODEL_FORM_PATTERN,
  QUESTION_KINDS,
  STRENGTHS,
  WITNESS_KINDS,
} from "./enums.ts";
export type * from "./types.ts";
