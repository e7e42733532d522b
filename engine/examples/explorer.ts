/**
 * An example engine: an explicit-state explorer of `graphs:1` models (fields in
 * `graph_model.ts`), written with `serveEngine`. It answers `outcomes`, `holds` and `satisfiable`
 * by walking schedules within the depth, steps and runs bounds, returns schedule witnesses in the
 * replay format, claims `proved` only when the search finished without reaching a bound, and
 * reports progress while it searches.
 *
 * Run it under a host: `deno run -A engine/main.ts check --manifest engine/examples/manifest.jsonc
 * --engine explorer`.
 *
 * @module
 */
import { formatSchedule } from "../replay.ts";
import type { RunRequest } from "../dispatcher.ts";
import { EngineFailure } from "../engine_failure.ts";
import { serveEngine } from "../serve_engine.ts";
import type { Bound, CoversResult, Model, Question, Result, Scalar, Value } from "../types.ts";
import { type Limits, type Policy, search, type SearchReport } from "./explore.ts";
import { compile, evaluate, type Expr, parseExpr, type Program } from "./graph_model.ts";

const ANSWERS = ["outcomes", "holds", "satisfiable"] as const;

interface Task {
  program: Program;
  policy: Policy;
  condition?: Expr;
}

/** Everything a question needs, or an `unsupported` failure saying what is missing. */
function prepare(question: Question, model: Model): Task {
  const no = (why: string) => new EngineFailure("unsupported", why);
  if (!(ANSWERS as readonly string[]).includes(question.kind)) {
    throw no(`${question.kind} questions are not taken`);
  }
  if (!model.graphs || model.graphs.version !== 1) throw no("the model has no graphs:1 form");
  if (question.subject !== model.graphs.subject) {
    throw no(`the graphs are of ${model.graphs.subject}, not ${question.subject}`);
  }
  if (question.subjectKind !== undefined && question.subjectKind !== "action") {
    throw no(`subjects of kind ${question.subjectKind} are not taken`);
  }
  if (question.free.includes("inputs")) throw no("free inputs are not taken");
  let program: Program;
  try {
    program = compile(model.graphs);
  } catch (error) {
    throw no(`the graphs are not what the explorer reads: ${(error as Error).message}`);
  }
  const task: Task = { program, policy: policy(question) };
  if (question.kind !== "outcomes") {
    if (!question.condition) throw no(`a ${question.kind} question needs a condition`);
    const named = program.assertions.get(question.condition.name);
    try {
      task.condition = named ?? parseExpr(question.condition.text ?? "");
    } catch {
      throw no(`condition ${question.condition.name} is neither an assertion nor JSON`);
    }
  }
  return task;
}

function policy(question: Question): Policy {
  if (question.free.includes("schedule")) return { all: true };
  if (question.schedule === "first") return { first: true };
  const seed = /^seed:(0|[1-9][0-9]*)$/.exec(question.schedule);
  if (seed) return { seed: Number(seed[1]) };
  throw new EngineFailure("unsupported", `schedule policy ${question.schedule} is not taken`);
}

function limits(bounds: Bound[]): Limits {
  const limit = (name: string) => bounds.find((b) => b.name === name)?.limit ?? 0;
  return { depth: limit("depth"), steps: limit("steps"), runs: limit("runs") };
}

function valuation(program: Program, vars: readonly Scalar[]): string {
  return program.variables.map((name, i) => `${name}=${vars[i]}`).join(" ");
}

async function run(request: RunRequest, context: Parameters<RunHandler>[1]): Promise<Result> {
  const started = Date.now();
  const task = prepare(request.question, request.model);
  const { program, condition } = task;
  const kind = request.question.kind;
  const outcomes = new Map<string, string>();
  const holds = (vars: readonly Scalar[]) => Boolean(evaluate(condition!, program, vars));
  context.progress({ text: `exploring ${request.question.subject}`, steps: 0, runs: 0, depth: 0 });
  let report: SearchReport;
  try {
    report = await search(program, {
      limits: limits(request.bounds),
      policy: task.policy,
      signal: context.signal,
      progress: (counters) => context.progress(counters),
      stopAt: kind === "holds"
        ? (vars) => !holds(vars)
        : kind === "satisfiable"
        ? holds
        : undefined,
      onTerminal: kind === "outcomes"
        ? (vars, deadlock, schedule) => {
          const text = valuation(program, vars) + (deadlock ? " (deadlock)" : "");
          if (!outcomes.has(text)) outcomes.set(text, formatSchedule(schedule()));
        }
        : undefined,
    });
  } catch (error) {
    if (!context.signal.aborted) throw error;
    throw new EngineFailure("budget", `stopped: ${(context.signal.reason as Error).message}`);
  }
  const reachedAny = Object.values(report.reached).some(Boolean);
  const exhaustive = "all" in task.policy;
  // A search over every schedule that hit no bound is a proof for this model; anything less is not.
  const complete = exhaustive && !reachedAny ? "proved" : exhaustive ? "bounded" : "observed";
  const base = {
    bounds: request.bounds.map((b) => ({
      ...b,
      reached: report.reached[b.name as keyof SearchReport["reached"]] ?? false,
    })),
    elapsed: Date.now() - started,
  };
  const counts = `${report.steps} steps, ${report.runs} runs, depth ${report.depth}`;
  if (kind === "outcomes") {
    const values: Value[] = [...outcomes.keys()].map((text, i) => ({
      name: `outcome ${i + 1}`,
      value: text,
    }));
    return {
      ...base,
      claim: "outcomes",
      strength: complete,
      values,
      executions: [...outcomes.values()].map((schedule) => ({ schedules: [schedule] })),
      reason: `${outcomes.size} distinct outcome(s) in ${counts}`,
    };
  }
  if (report.found) {
    const schedule = formatSchedule(report.found);
    return {
      ...base,
      claim: kind === "holds" ? "violated" : "satisfiable",
      strength: "witnessed",
      witness: { schedules: [schedule], at: report.found.length },
      reason: `reached after ${report.found.length} move(s); ${counts}`,
    };
  }
  return {
    ...base,
    claim: kind === "holds" ? "holds" : "unsatisfiable",
    strength: complete,
    reason: `no ${kind === "holds" ? "violation" : "such state"} in ${counts}`,
  };
}

type RunHandler = NonNullable<Parameters<typeof serveEngine>[0]["run"]>;

function covers(question: Question, model: Model): CoversResult {
  try {
    prepare(question, model);
    return { covers: true };
  } catch (error) {
    return { covers: false, reason: (error as Error).message };
  }
}

if (import.meta.main) {
  await serveEngine({
    describe: {
      name: "explorer",
      version: "0.1.0",
      protocol: 1,
      answers: [...ANSWERS],
      subjects: ["action"],
      bounds: ["depth", "steps", "runs"],
      witness: "schedule",
      model: ["graphs:1"],
      authority: "proved",
      concurrent: false,
    },
    covers,
    run,
  });
}
