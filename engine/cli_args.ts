/**
 * How the CLI turns flags and JSON files into a question, a model and a budget. A JSON file gives
 * the whole object; flags fill in or override single fields.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { nearestName } from "../shared/nearest_name.ts";
import { EngineError } from "./errors.ts";
import type { Budget, Model, Question, QuestionKind } from "./types.ts";

/** The verbs of the CLI. */
export const VERBS = ["describe", "covers", "run", "check"] as const;

/** The parsed command line. */
export interface CliArgs {
  /** What to do. */
  verb: typeof VERBS[number];
  /** The manifest file. */
  manifest: string;
  /** The engine's name in it. */
  engine: string;
  /** The flags, by name. */
  values: Record<string, string | boolean | undefined>;
}

const FLAGS = {
  manifest: { type: "string" },
  engine: { type: "string" },
  question: { type: "string" },
  model: { type: "string" },
  budget: { type: "string" },
  cases: { type: "string" },
  "question-kind": { type: "string" },
  subject: { type: "string" },
  "subject-kind": { type: "string" },
  schedule: { type: "string" },
  free: { type: "string" },
  condition: { type: "string" },
  "condition-text": { type: "string" },
  deadline: { type: "string" },
  depth: { type: "string" },
  steps: { type: "string" },
  runs: { type: "string" },
  memory: { type: "string" },
  jobs: { type: "string" },
  "grace-ms": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** The usage text. */
export const USAGE =
  `usage: deno run -A engine/main.ts <verb> --manifest FILE --engine NAME [options]

An engine is an analysis program (a model checker, an explorer) that this host starts as a child
process and asks about a model over JSON-RPC on stdio; only engine authors and the tools that run
engines need this command. The manifest (JSONC) says how to start each engine (docs/engine.md).

verbs:
  describe   start the engine, check its Description against the manifest, print it
  covers     ask whether the engine takes a question
  run        run a question and print the result with the host's verdict
  check      run the conformance suite (needs --cases FILE) and print a pass/fail table

question:  --question FILE | --question-kind KIND --subject NAME [--subject-kind KIND]
           [--schedule POLICY (default all)] [--free schedule,inputs (default schedule)]
           [--condition NAME] [--condition-text TEXT]
model:     --model FILE (a JSON Model: {"graphs": ...} or {"sources": ...})
budget:    --budget FILE | --deadline (RFC 3339, or a duration like 30s or 500ms from now)
           --depth N --steps N --runs N --memory N --jobs N
cases:     --cases FILE (JSON: {"model": Model, "questions": [Question, ...],
           "slow": {"question": Question, "model": Model}}; see docs/engine.md)
other:     --grace-ms N (wait between cancel, stdin close, SIGTERM and SIGKILL; default 2000)
           -h, --help (print this text)

JSON goes to stdout, progress and tables to stderr. Exit code 0 on success, 1 on failure.`;

/**
 * Parses argv: `"help"` when `--help` or `-h` is given (whatever else is), else the verb and its
 * flags.
 *
 * @throws {EngineError} with code `invalid` naming the flag or verb at fault and the nearest known
 * one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCli } from "./cli_args.ts";
 * assert.equal(parseCli(["run", "--help"]), "help");
 * const args = parseCli(["describe", "--manifest", "m.jsonc", "--engine", "e"]);
 * assert.equal(args !== "help" && args.verb, "describe");
 * assert.throws(() => parseCli(["describe", "--manifst", "m.jsonc"]), /did you mean --manifest\?/);
 * ```
 */
export function parseCli(argv: string[]): CliArgs | "help" {
  if (argv.includes("--help") || argv.includes("-h")) return "help";
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: FLAGS, allowPositionals: true });
  } catch (error) {
    const flag = /'(-[^']*)'/.exec((error as Error).message)?.[1];
    const known = flag?.startsWith("--")
      ? nearestName(flag.slice(2), Object.keys(FLAGS))
      : undefined;
    throw invalid(`${(error as Error).message}${known ? `; did you mean --${known}?` : ""}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    throw invalid(`expected one verb (${VERBS.join(", ")}), got ${positionals.length}`);
  }
  const verb = positionals[0];
  if (!(VERBS as readonly string[]).includes(verb)) {
    const near = nearestName(verb, VERBS);
    throw invalid(
      `unknown verb ${verb}; ` +
        (near ? `did you mean ${near}?` : `the verbs are ${VERBS.join(", ")}`),
    );
  }
  if (!values.manifest) throw invalid("--manifest FILE is required");
  if (!values.engine) throw invalid("--engine NAME is required");
  return {
    verb: verb as CliArgs["verb"],
    manifest: values.manifest,
    engine: values.engine,
    values,
  };
}

function invalid(message: string): EngineError {
  return new EngineError("invalid", "cli", `${message} (--help prints the usage)`);
}

async function readJson(path: string, what: string): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    throw new EngineError(
      "invalid",
      "cli",
      `cannot read the ${what} ${path}: ${(error as Error).message}`,
    );
  }
}

/** The question from `--question` and the question flags. */
export async function questionFrom(args: CliArgs): Promise<Question> {
  const v = args.values;
  const base = v.question ? await readJson(String(v.question), "question") as Question : undefined;
  const question = { ...base } as Partial<Question>;
  if (v["question-kind"]) question.kind = String(v["question-kind"]) as QuestionKind;
  if (v.subject) question.subject = String(v.subject);
  if (v["subject-kind"]) question.subjectKind = String(v["subject-kind"]);
  if (v.schedule || !question.schedule) question.schedule = String(v.schedule ?? "all");
  if (v.free || !question.free) {
    question.free = String(v.free ?? "schedule").split(",").filter(Boolean) as Question["free"];
  }
  if (v.condition || v["condition-text"]) {
    question.condition = { name: String(v.condition ?? "condition") };
    if (v["condition-text"]) question.condition.text = String(v["condition-text"]);
  }
  return question as Question;
}

/** The model from `--model`. */
export async function modelFrom(args: CliArgs): Promise<Model> {
  if (!args.values.model) throw new EngineError("invalid", args.engine, "--model FILE is required");
  return await readJson(String(args.values.model), "model") as Model;
}

/** The budget from `--budget` and the budget flags. */
export async function budgetFrom(args: CliArgs): Promise<Budget> {
  const v = args.values;
  const budget = (v.budget ? await readJson(String(v.budget), "budget") : {}) as Budget;
  for (const name of ["depth", "steps", "runs", "memory", "jobs"] as const) {
    if (v[name] !== undefined) budget[name] = Number(v[name]);
  }
  if (v.deadline) budget.deadline = deadlineFrom(String(v.deadline));
  return budget;
}

/** An RFC 3339 time as given, or a duration (`30s`, `500ms`, `2m`) from now. */
function deadlineFrom(text: string): string {
  const duration = /^(\d+)(ms|s|m)$/.exec(text);
  if (!duration) return text;
  const ms = Number(duration[1]) * { ms: 1, s: 1000, m: 60_000 }[duration[2] as "ms" | "s" | "m"];
  return new Date(Date.now() + ms).toISOString();
}
