/**
 * The replay format of schedule witnesses. The contract gives only the line shape
 * `step N: <token>@<node> first of ...`; we fix the rest so a witness can be checked and replayed:
 *
 * ```
 * schedule := "" | line ("\n" line)*
 * line     := "step " N ": " move " first of " move (", " move)*
 * move     := token "@" node          (neither contains white space, "@" or ",")
 * ```
 *
 * Steps are numbered 1, 2, 3, ... without gaps. After `first of` come the moves that were enabled
 * at that step, in the order the engine considered them; the move taken must be one of them. The
 * empty schedule is the initial state alone (a violation there needs no move).
 *
 * @module
 */

/** One move: a token taken at a node. */
export interface Move {
  /** The token. */
  token: string;
  /** The node it was taken at. */
  node: string;
}

/** One step of a schedule. */
export interface Step {
  /** The move taken. */
  move: Move;
  /** The moves that were enabled, the taken one among them. */
  enabled: Move[];
}

/** A parsed schedule, or what is wrong with it. */
export type ParsedSchedule = { ok: true; steps: Step[] } | { ok: false; message: string };

const LINE = /^step ([1-9][0-9]*): ([^\s@,]+)@([^\s@,]+) first of (.+)$/;
const MOVE = /^([^\s@,]+)@([^\s@,]+)$/;

/**
 * Parses a schedule in the replay format.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSchedule } from "./mod.ts";
 * const parsed = parseSchedule("step 1: read@alice first of read@alice, read@bob");
 * assert.deepEqual(parsed.ok && parsed.steps[0].move, { token: "read", node: "alice" });
 * const skipped = parseSchedule("step 2: read@alice first of read@alice");
 * assert.deepEqual(skipped, { ok: false, message: "line 1 is numbered 2, expected 1" });
 * ```
 */
export function parseSchedule(text: string): ParsedSchedule {
  if (text === "") return { ok: true, steps: [] };
  const steps: Step[] = [];
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  for (const [index, line] of lines.entries()) {
    const where = `line ${index + 1}`;
    const match = LINE.exec(line);
    if (!match) {
      return { ok: false, message: `${where} is not "step N: <token>@<node> first of ..."` };
    }
    if (Number(match[1]) !== index + 1) {
      return { ok: false, message: `${where} is numbered ${match[1]}, expected ${index + 1}` };
    }
    const enabled: Move[] = [];
    for (const item of match[4].split(", ")) {
      const move = MOVE.exec(item);
      if (!move) return { ok: false, message: `${where}: "${item}" is not <token>@<node>` };
      enabled.push({ token: move[1], node: move[2] });
    }
    const taken = { token: match[2], node: match[3] };
    if (!enabled.some((m) => m.token === taken.token && m.node === taken.node)) {
      return { ok: false, message: `${where}: the move taken is not among those enabled` };
    }
    steps.push({ move: taken, enabled });
  }
  return { ok: true, steps };
}

/**
 * Writes steps in the replay format; the inverse of {@linkcode parseSchedule}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatSchedule } from "./mod.ts";
 * const move = { token: "read", node: "alice" };
 * assert.equal(formatSchedule([{ move, enabled: [move] }]), "step 1: read@alice first of read@alice");
 * ```
 */
export function formatSchedule(steps: readonly Step[]): string {
  const move = (m: Move) => `${m.token}@${m.node}`;
  return steps.map((step, i) =>
    `step ${i + 1}: ${move(step.move)} first of ${step.enabled.map(move).join(", ")}`
  ).join("\n");
}
