/**
 * Explicit-state search of a compiled graphs:1 program: a depth-first walk over schedules that
 * remembers every state it has seen (at the smallest depth it was seen), within the depth, steps
 * and runs bounds. A *step* is one move taken; a *run* is one schedule walked to its end (a
 * terminal state, the depth bound, or a state already explored).
 *
 * @module
 */
import type { Scalar } from "../types.ts";
import type { Move, Step } from "../replay.ts";
import { evaluate, type Program } from "./graph_model.ts";

/** Limits of a search; 0 leaves a bound open. */
export interface Limits {
  /** Longest schedule. */
  depth: number;
  /** Most moves taken in all. */
  steps: number;
  /** Most schedules walked. */
  runs: number;
}

/** Which schedules are walked: all of them, always the first enabled move, or a seeded draw. */
export type Policy = { all: true } | { first: true } | { seed: number };

/** What to look for and where to report. */
export interface SearchOptions {
  /** Bounds. */
  limits: Limits;
  /** Which schedules. */
  policy: Policy;
  /** Stops the search at the first state where this holds, returning the schedule to it. */
  stopAt?: (vars: readonly Scalar[]) => boolean;
  /** Called at each terminal state with the schedule to it. */
  onTerminal?: (vars: readonly Scalar[], deadlock: boolean, schedule: () => Step[]) => void;
  /** Aborts the search. */
  signal: AbortSignal;
  /** Called now and then with the counters. */
  progress: (counters: { steps: number; runs: number; depth: number }) => void;
}

/** How a search ended. */
export interface SearchReport {
  /** The schedule to the state `stopAt` held at, if any. */
  found?: Step[];
  /** Which bounds were reached before the search could finish. */
  reached: { depth: boolean; steps: boolean; runs: boolean };
  /** Moves taken. */
  steps: number;
  /** Schedules walked. */
  runs: number;
  /** Deepest schedule. */
  depth: number;
}

interface Frame {
  pcs: number[];
  vars: Scalar[];
  depth: number;
  enabled: Move[];
  moves: Move[];
  next: number;
}

const YIELD_EVERY = 2048;
const PROGRESS_MS = 100;

/** Searches `program`; see {@linkcode SearchOptions}. Throws the signal's reason when aborted. */
export async function search(program: Program, options: SearchOptions): Promise<SearchReport> {
  const { limits, policy } = options;
  const random = "seed" in policy ? seeded(policy.seed) : undefined;
  const report: SearchReport = {
    reached: { depth: false, steps: false, runs: false },
    steps: 0,
    runs: 0,
    depth: 0,
  };
  const visited = new Map<string, number>();
  const frames: Frame[] = [];
  const path = () =>
    frames.map((f) => ({ move: f.moves[f.next - 1], enabled: f.enabled })).filter((s) => s.move);
  let lastProgress = 0;

  /** Enters a state; returns false when the search must stop there. */
  const enter = (pcs: number[], vars: Scalar[], depth: number): boolean => {
    const key = `${pcs.join(",")}|${JSON.stringify(vars)}`;
    const seen = visited.get(key);
    if (seen !== undefined && seen <= depth) {
      report.runs++;
      return true;
    }
    visited.set(key, depth);
    report.depth = Math.max(report.depth, depth);
    if (options.stopAt?.(vars)) return false;
    const enabled = enabledMoves(program, pcs, vars);
    if (enabled.length === 0) {
      report.runs++;
      const deadlock = pcs.some((pc, i) => pc < program.threads[i].steps.length);
      options.onTerminal?.(vars, deadlock, path);
      return true;
    }
    if (limits.depth > 0 && depth >= limits.depth) {
      report.reached.depth = true;
      report.runs++;
      return true;
    }
    const moves = "all" in policy
      ? enabled
      : [random ? enabled[Math.floor(random() * enabled.length)] : enabled[0]];
    frames.push({ pcs, vars, depth, enabled, moves, next: 0 });
    return true;
  };

  if (!enter(program.threads.map(() => 0), [...program.initial], 0)) {
    return { ...report, found: [] };
  }
  while (frames.length > 0) {
    const top = frames[frames.length - 1];
    if (top.next >= top.moves.length) {
      frames.pop();
      continue;
    }
    if (limits.steps > 0 && report.steps >= limits.steps) {
      report.reached.steps = true;
      break;
    }
    if (limits.runs > 0 && report.runs >= limits.runs) {
      report.reached.runs = true;
      break;
    }
    const move = top.moves[top.next++];
    report.steps++;
    const [pcs, vars] = apply(program, top, move);
    if (!enter(pcs, vars, top.depth + 1)) {
      return { ...report, found: path() };
    }
    if (report.steps % YIELD_EVERY === 0) {
      // Lets `cancel` and the deadline reach the signal between stretches of search.
      await new Promise((resolve) => setTimeout(resolve, 0));
      options.signal.throwIfAborted();
      if (Date.now() - lastProgress >= PROGRESS_MS) {
        lastProgress = Date.now();
        options.progress({ steps: report.steps, runs: report.runs, depth: report.depth });
      }
    }
  }
  return report;
}

function enabledMoves(program: Program, pcs: number[], vars: Scalar[]): Move[] {
  const moves: Move[] = [];
  for (const [i, thread] of program.threads.entries()) {
    const step = thread.steps[pcs[i]];
    if (step && (step.guard === undefined || evaluate(step.guard, program, vars))) {
      moves.push({ token: step.token, node: thread.node });
    }
  }
  return moves;
}

function apply(program: Program, frame: Frame, move: Move): [number[], Scalar[]] {
  const i = program.threads.findIndex((t) => t.node === move.node);
  const thread = program.threads[i];
  const step = thread.steps[frame.pcs[i]];
  const vars = [...frame.vars];
  for (const [at, e] of step.assign) vars[at] = evaluate(e, program, frame.vars);
  const pcs = [...frame.pcs];
  pcs[i] = pcs[i] + 1 === thread.steps.length && thread.loop ? 0 : pcs[i] + 1;
  return [pcs, vars];
}

/** A small deterministic generator (mulberry32), so a `seed:<n>` schedule replays exactly. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
