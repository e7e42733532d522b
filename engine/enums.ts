/**
 * The enumerations of External Engine Protocol v1, each listed once. The zod schemas build their
 * enums from these arrays and the types in `types.ts` are derived from them, so a value removed
 * here is gone from the wire rules and from the types alike.
 *
 * @module
 */

/**
 * The kinds of question an engine can answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { QUESTION_KINDS, type QuestionKind } from "./mod.ts";
 * const kind: QuestionKind = "holds";
 * assert.ok(QUESTION_KINDS.includes(kind));
 * assert.equal(QUESTION_KINDS.length, 7);
 * ```
 */
export const QUESTION_KINDS = [
  "evaluate",
  "outcomes",
  "holds",
  "sensitive",
  "satisfiable",
  "sweep",
  "compute",
] as const;

/** What a result can claim. */
export const CLAIMS = [
  "none",
  "holds",
  "violated",
  "sensitive",
  "value",
  "table",
  "outcomes",
  "satisfiable",
  "unsatisfiable",
  "unbounded",
] as const;

/**
 * How strong a claim is, weakest first; the index is the order the verdict rules compare by.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { STRENGTHS } from "./mod.ts";
 * assert.ok(STRENGTHS.indexOf("bounded") < STRENGTHS.indexOf("proved"));
 * ```
 */
export const STRENGTHS = ["not covered", "observed", "witnessed", "bounded", "proved"] as const;

/** The kinds of witness an engine returns. */
export const WITNESS_KINDS = ["schedule", "assignment", "none"] as const;

/** The bounds an engine can take. */
export const BOUND_NAMES = ["depth", "steps", "runs", "memory"] as const;

/** The codes of an engine's error response. */
export const ERROR_CODES = ["unsupported", "budget", "internal"] as const;

/** What a question can leave free. */
export const FREE_PARTS = ["schedule", "inputs"] as const;

/** How random-function draws resolve, as `-draws` spells it. */
export const DRAW_MODES = ["min", "max", "average"] as const;

/**
 * A model form: `sources`, `rdf`, or `graphs:<n>` with a positive integer without a leading zero.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MODEL_FORM_PATTERN } from "./mod.ts";
 * assert.ok(MODEL_FORM_PATTERN.test("graphs:12"));
 * assert.ok(!MODEL_FORM_PATTERN.test("graphs:01"));
 * ```
 */
export const MODEL_FORM_PATTERN: RegExp = /^(?:sources|rdf|graphs:[1-9][0-9]*)$/;
