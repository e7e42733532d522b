/**
 * The conformance suite behind `engine/main.ts check`: it exercises one engine through the host
 * (handshake, every declared answer, cancel, deadline) and through a raw pipe (malformed input,
 * stdin close), and reports each check as passed or failed with a detail.
 *
 * @module
 */
import { z } from "zod";
import { EngineError } from "./errors.ts";
import { EngineHost, type HostOptions } from "./engine_host.ts";
import { type EngineEntry, engineEnv } from "./manifest.ts";
import { EngineProcess } from "./engine_process.ts";
import { DescriptionSchema, EngineResponseSchema, ModelSchema, QuestionSchema } from "./schema.ts";
import type { Model, Question } from "./types.ts";
import { check } from "./validate.ts";
import { ADMITTED_CLAIMS } from "./verdict.ts";

/** What the suite asks: a model with one question per declared answer, and a slow run. */
export interface Cases {
  /** The model the questions are about. */
  model: Model;
  /** Questions; each declared answer needs at least one. */
  questions: Question[];
  /** A run that keeps the engine busy for seconds, for the cancel and deadline checks. */
  slow: { question: Question; model: Model };
}

const CasesSchema: z.ZodType<Cases> = z.strictObject({
  model: ModelSchema,
  questions: z.array(QuestionSchema).min(1),
  slow: z.strictObject({ question: QuestionSchema, model: ModelSchema }),
});

/**
 * Parses the text of a cases file (JSON).
 *
 * @throws {EngineError} with code `invalid`, naming each problem by its path in the file.
 */
export function parseCases(text: string, source: string): Cases {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new EngineError(
      "invalid",
      source,
      `the cases file is not JSON: ${(error as Error).message}`,
    );
  }
  const checked = check(CasesSchema, raw, "");
  if (!checked.ok) throw new EngineError("invalid", source, `the cases file: ${checked.message}`);
  return checked.value;
}

/** One line of the report. */
export interface CheckRow {
  /** What was checked. */
  name: string;
  /** Whether it passed. */
  pass: boolean;
  /** What was seen. */
  detail: string;
}

/**
 * Runs the suite. Never throws for an engine's failure: whatever goes wrong in a check, an error
 * or a rejection included, becomes that check's failed row.
 */
export async function runConformance(
  entry: EngineEntry,
  cases: Cases,
  options: HostOptions = {},
): Promise<CheckRow[]> {
  const rows: CheckRow[] = [];
  const row = (name: string, pass: boolean, detail: string) => rows.push({ name, pass, detail });
  const step = async (name: string, work: () => Promise<[boolean, string]>) => {
    try {
      row(name, ...await work());
    } catch (error) {
      row(name, false, error instanceof Error ? error.message : String(error));
    }
  };
  const graceMs = options.graceMs ?? 2000;

  let host: EngineHost;
  try {
    host = await EngineHost.start(entry, options);
    row("handshake", true, `${host.description.name} ${host.description.version} matches`);
  } catch (error) {
    row("handshake", false, (error as Error).message);
    return rows;
  }
  try {
    for (const kind of host.description.answers) {
      const question = cases.questions.find((q) => q.kind === kind);
      if (!question) {
        row(`answer ${kind}`, false, "the cases have no question of this kind");
        continue;
      }
      await step(`answer ${kind}`, () => answers(host, question, cases.model));
    }
    await step("cancel", () => interrupted(host, cases, "cancel", graceMs));
    await step("deadline", () => interrupted(host, cases, "deadline", graceMs));
    row(
      "clean stdout",
      !host.pollutingStdout,
      host.pollutingStdout
        ? `stdout carried non-protocol output: ${host.diagnostics.at(-1)?.detail}`
        : "only protocol messages",
    );
  } finally {
    await host.close();
  }
  await step("malformed input", () => malformed(entry, graceMs));
  await step("stdin close", () => stdinClose(entry, graceMs));
  return rows;
}

async function answers(
  host: EngineHost,
  question: Question,
  model: Model,
): Promise<[boolean, string]> {
  try {
    const covers = await host.covers(question, model);
    if (!covers.covers) return [false, `covers says no: ${covers.reason ?? "no reason"}`];
    const { result, verdict } = await host.run(question, model);
    const admitted = [...ADMITTED_CLAIMS[question.kind], "none", "unbounded"];
    if (!admitted.includes(result.claim)) {
      return [false, `claim ${result.claim} does not answer ${question.kind}`];
    }
    return [
      verdict.strength === verdict.claimed,
      `${result.claim} ${result.strength}; verdict ${verdict.strength} (${verdict.reason})`,
    ];
  } catch (error) {
    return [false, (error as Error).message];
  }
}

/** A slow run stopped by `cancel` or by its deadline must fail at once and leave the engine usable. */
async function interrupted(
  host: EngineHost,
  cases: Cases,
  how: "cancel" | "deadline",
  graceMs: number,
): Promise<[boolean, string]> {
  const controller = new AbortController();
  const progressed = Promise.withResolvers<void>();
  const budget = how === "deadline" ? { deadline: new Date(Date.now() + 300).toISOString() } : {};
  // Settled into a value at once: a run refused before it starts must not reject unobserved.
  const running = host.run(cases.slow.question, cases.slow.model, budget, {
    signal: controller.signal,
    onProgress: () => progressed.resolve(),
  }).then((outcome) => ({ outcome }), (error: unknown) => ({ error }));
  if (how === "cancel") {
    const timer = setTimeout(() => progressed.resolve(), 300);
    await progressed.promise;
    clearTimeout(timer);
    controller.abort();
  }
  const settled = await running;
  if ("outcome" in settled) {
    const claim = settled.outcome.result.claim;
    return [false, `the slow run finished (${claim}) before it could be stopped`];
  }
  const { error } = settled;
  const code = error instanceof EngineError ? error.code : "unknown";
  const expected = how === "cancel" ? "cancelled" : "deadline";
  if (code !== expected) return [false, `expected ${expected}, got ${(error as Error).message}`];
  // The engine must answer the stopped run itself, within the grace period, and stay usable.
  const acknowledged = await within(graceMs, async () => {
    await host.covers(cases.questions[0], cases.model);
  });
  const late = host.diagnostics.some((d) => d.kind === "late" && d.detail.includes("cancelled"));
  if (!acknowledged || !late) {
    return [false, `the engine did not answer the stopped run within ${graceMs} ms`];
  }
  return [true, `stopped at once; the engine answered the ${how} and took the next request`];
}

async function within(ms: number, work: () => Promise<void>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work().then(() => true, () => false),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Talks to a fresh engine over a raw pipe, bypassing the host's own validation. */
async function raw<T>(
  entry: EngineEntry,
  graceMs: number,
  talk: (process: EngineProcess, lines: string[], next: () => Promise<void>) => Promise<T>,
): Promise<T> {
  const lines: string[] = [];
  let wake = () => {};
  const next = () => new Promise<void>((resolve) => wake = resolve);
  const process = new EngineProcess(
    { command: entry.command, cwd: entry.cwd, env: engineEnv(entry) },
    { maxLineBytes: 1 << 20, stderrBytes: 4096 },
    {
      line: (text) => {
        lines.push(text);
        wake();
      },
      overlong: () => lines.push("(overlong line)"),
      partial: (head) => lines.push(head),
    },
  );
  try {
    return await talk(process, lines, next);
  } finally {
    await process.shutdown(graceMs);
  }
}

async function malformed(entry: EngineEntry, graceMs: number): Promise<[boolean, string]> {
  return await raw(entry, graceMs, async (process, lines, next) => {
    const inputs = [
      "this is not json",
      `{"jsonrpc":"2.0","id":1,"method":"describe","params":{}}`,
      `{"jsonrpc":"2.0","id":2,"method":"frobnicate","params":{}}`,
      `{"jsonrpc":"2.0","id":3,"method":"describe","params":{"protocols":[1]},"extra":true}`,
      `{"jsonrpc":"2.0","id":4,"method":"describe","params":{"protocols":[1]}}`,
    ];
    for (const line of inputs) await process.send(line);
    const until = Date.now() + 5000;
    while (lines.length < 4 && Date.now() < until) {
      if (!await within(until - Date.now(), next)) break;
    }
    const responses = lines.map((line) => {
      try {
        return check(EngineResponseSchema, JSON.parse(line), "response");
      } catch {
        return { ok: false as const, message: `not JSON: ${line.slice(0, 80)}` };
      }
    });
    const bad = responses.find((r) => !r.ok);
    if (bad && !bad.ok) return [false, `stdout carried an invalid message: ${bad.message}`];
    const byId = new Map(responses.map((r) => r.ok ? [r.value.id, r.value] : [0, undefined]));
    for (const id of [1, 2, 3]) {
      if (!byId.get(id)?.error) return [false, `invalid request ${id} got no error response`];
    }
    const description = check(DescriptionSchema, byId.get(4)?.result, "result");
    if (!description.ok) {
      return [false, `describe after the bad lines failed: ${description.message}`];
    }
    return [true, "errors for 3 invalid requests, garbage skipped, then a valid describe"];
  });
}

async function stdinClose(entry: EngineEntry, graceMs: number): Promise<[boolean, string]> {
  return await raw(entry, graceMs, async (process, _lines, next) => {
    await process.send(`{"jsonrpc":"2.0","id":1,"method":"describe","params":{"protocols":[1]}}`);
    await within(5000, next);
    await process.closeStdin();
    const exited = await within(graceMs, async () => void await process.status);
    if (!exited) return [false, `still running ${graceMs} ms after stdin closed`];
    const status = await process.status;
    return [true, `exited with code ${status.code} after stdin closed`];
  });
}
