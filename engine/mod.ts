/**
 * External Engine Protocol v1: a host that runs analysis engines as child processes and decides
 * what stands of their claims, and `serveEngine` to write such an engine in a few lines.
 *
 * @example
 * ```ts ignore
 * import { EngineHost, loadManifest, manifestEntry } from "@sandbar/sandbar/engine";
 * const manifest = await loadManifest("engines.jsonc");
 * await using host = await EngineHost.start(manifestEntry(manifest, "explorer"));
 * const outcome = await host.run(question, model, { depth: 20 });
 * console.log(outcome.result.strength, "->", outcome.verdict.strength, outcome.verdict.reason);
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
