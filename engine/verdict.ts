/**
 * What stands of a claim. The engine only claims a strength; the host decides, by these rules,
 * applied in order, each of which can only lower the strength (order: `not covered` < `observed` <
 * `witnessed` < `bounded` < `proved`):
 *
 * 1. **Answers the question.** The claim must be one the question's kind admits (see
 *    {@linkcode ADMITTED_CLAIMS}); otherwise `not covered`. A claim of `none` is `not covered`.
 * 2. **Authority.** Capped at the entry's `authority`; an entry without one is capped at
 *    `observed`, since nothing vouches for the engine.
 * 3. **Witness.** `violated`, `satisfiable` and `sensitive` claim that something exists, so they
 *    need a witness of the entry's kind: for `schedule`, one schedule in the replay format (two,
 *    and a `feature`, for `sensitive`) with `at` inside it; for `assignment`, `inputs` and no
 *    schedules. An entry whose witness kind is `none`, or a witness that is missing or malformed,
 *    leaves such a claim at `observed`. For `outcomes`, every execution must be in the replay
 *    format, or the claim is `observed`.
 * 4. **Bounds.** A bound `reached` caps the claim at `bounded`. So does a bound the run set (limit
 *    above 0) that the result does not report, since then nobody knows whether it was reached.
 *
 * @module
 */
import { parseSchedule } from "./replay.ts";
import { STRENGTHS } from "./enums.ts";
import type { Bound, Claim, QuestionKind, Result, Strength, WitnessKind } from "./types.ts";

/** The host's decision about one result, beside the engine's claim. */
export interface Verdict {
  /** What the engine claimed. */
  claim: Claim;
  /** The strength the engine claimed. */
  claimed: Strength;
  /** The strength that stands. */
  strength: Strength;
  /** Why: each rule that lowered the strength, or that the claim stands. */
  reason: string;
}

/** What the verdict is decided against. */
export interface VerdictContext {
  /** The kind of question asked. */
  question: QuestionKind;
  /** The entry's authority; absent caps at `observed`. */
  authority?: Strength;
  /** The entry's witness kind; absent means `none`. */
  witness?: WitnessKind;
  /** The bounds the run sent. */
  bounds?: Bound[];
}

/**
 * The claims each kind of question admits, besides `none` and `unbounded`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ADMITTED_CLAIMS } from "./mod.ts";
 * assert.deepEqual(ADMITTED_CLAIMS.holds, ["holds", "violated"]);
 * ```
 */
export const ADMITTED_CLAIMS: Readonly<Record<QuestionKind, readonly Claim[]>> = {
  evaluate: ["value"],
  outcomes: ["outcomes"],
  holds: ["holds", "violated"],
  sensitive: ["sensitive", "holds"],
  satisfiable: ["satisfiable", "unsatisfiable"],
  sweep: ["table"],
  compute: ["value", "table"],
};

const NEEDS_WITNESS: readonly Claim[] = ["violated", "satisfiable", "sensitive"];

const rank = (s: Strength) => STRENGTHS.indexOf(s);

/**
 * Decides what stands of `result`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { adjudicate } from "./mod.ts";
 * const verdict = adjudicate(
 *   { claim: "holds", strength: "proved", bounds: [{ name: "depth", limit: 8, reached: true }] },
 *   { question: "holds", authority: "proved", witness: "schedule" },
 * );
 * assert.equal(verdict.strength, "bounded");
 * assert.equal(verdict.reason, "bound depth (limit 8) was reached");
 * ```
 */
export function adjudicate(result: Result, context: VerdictContext): Verdict {
  let strength = result.strength;
  const reasons: string[] = [];
  const cap = (limit: Strength, why: string) => {
    if (rank(strength) > rank(limit)) {
      strength = limit;
      reasons.push(why);
    }
  };

  if (result.claim === "none") cap("not covered", "the engine made no claim");
  else if (
    result.claim !== "unbounded" && !ADMITTED_CLAIMS[context.question].includes(result.claim)
  ) {
    cap("not covered", `claim ${result.claim} does not answer a ${context.question} question`);
  }

  const authority = context.authority ?? "observed";
  cap(authority, `the entry's authority is ${context.authority ?? "not set (observed)"}`);

  const witnessProblem = checkWitness(result, context.witness ?? "none");
  if (witnessProblem) cap("observed", witnessProblem);

  for (const bound of result.bounds ?? []) {
    if (bound.reached) cap("bounded", `bound ${bound.name} (limit ${bound.limit}) was reached`);
  }
  for (const sent of context.bounds ?? []) {
    if (sent.limit > 0 && !result.bounds?.some((b) => b.name === sent.name)) {
      cap("bounded", `the result does not say whether bound ${sent.name} was reached`);
    }
  }

  return {
    claim: result.claim,
    claimed: result.strength,
    strength,
    reason: reasons.length > 0 ? reasons.join("; ") : `stands as claimed (${result.strength})`,
  };
}

/** What is wrong with the evidence the claim needs, or undefined when nothing is. */
function checkWitness(result: Result, kind: WitnessKind): string | undefined {
  if (result.claim === "outcomes") {
    for (const [i, execution] of (result.executions ?? []).entries()) {
      for (const schedule of execution.schedules ?? []) {
        const parsed = parseSchedule(schedule);
        if (!parsed.ok) return `execution ${i + 1} is not in the replay format: ${parsed.message}`;
      }
    }
    return undefined;
  }
  if (!NEEDS_WITNESS.includes(result.claim)) return undefined;
  const needs = `claim ${result.claim} needs a witness`;
  if (kind === "none") return `${needs}, and the entry declares witness none`;
  const witness = result.witness;
  if (!witness) return `${needs}; there is none`;
  if (kind === "assignment") {
    if (witness.schedules?.length) return `${needs} of kind assignment; it carries schedules`;
    if (!witness.inputs?.length) return `${needs} of kind assignment; it has no inputs`;
    return undefined;
  }
  const expected = result.claim === "sensitive" ? 2 : 1;
  const schedules = witness.schedules ?? [];
  if (schedules.length !== expected) {
    return `${needs} with ${expected} schedule(s); it has ${schedules.length}`;
  }
  if (result.claim === "sensitive" && !witness.feature) {
    return `${needs} naming the feature the schedules diverge on`;
  }
  for (const schedule of schedules) {
    const parsed = parseSchedule(schedule);
    if (!parsed.ok) return `the witness is not in the replay format: ${parsed.message}`;
    if (witness.at !== undefined && witness.at > parsed.steps.length) {
      return `the witness's at (${witness.at}) is past its ${parsed.steps.length} steps`;
    }
  }
  return undefined;
}
