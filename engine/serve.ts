/**
 * The engine side of the protocol: `serveEngine` turns three handlers into an engine process that
 * reads requests from stdin and writes responses on stdout.
 *
 * Rules it keeps, where the contract is silent:
 * - A request whose question kind is not among the Description's `answers`, a method with no
 *   handler, or params that fail validation get error `unsupported`.
 * - A handler that throws {@linkcode EngineFailure} answers with its code (`BudgetExhausted` is
 *   `budget`); any other thrown error answers `internal`. A result that fails validation is
 *   `internal` too, so an engine cannot put an invalid message on the wire by mistake.
 * - `cancel` aborts the run's signal. The run is still answered, so the host knows the engine is
 *   free again; the host ignores that late answer.
 * - At the budget's deadline the signal aborts as well.
 * - Lines that are not host messages are reported on stderr and skipped; stdout carries nothing
 *   but protocol messages.
 * - When stdin closes, every run is aborted and, with the real stdin, the process exits.
 *
 * @module
 */
import { LineSplitter, LineWriter, readLines, readStdinLines } from "./framing.ts";
import {
  check,
  CoversResultSchema,
  DescriptionSchema,
  HostMessageSchema,
  ResultSchema,
} from "./schema.ts";
import type {
  Bound,
  Budget,
  CoversResult,
  Description,
  ErrorCode,
  Model,
  Progress,
  Question,
  Result,
} from "./types.ts";

/** The parameters of a `run` request. */
export interface RunRequest {
  /** The question. */
  question: Question;
  /** The model. */
  model: Model;
  /** The bounds, set to the budget's limits; a limit of 0 leaves a bound open. */
  bounds: Bound[];
  /** The budget. */
  budget: Budget;
}

/** What a `run` handler gets besides the request. */
export interface RunContext {
  /** The request's id. */
  id: number;
  /** Aborts on `cancel`, at the budget's deadline, and when stdin closes. */
  signal: AbortSignal;
  /** Sends a `progress` notification for this run; a no-op once the run has been answered. */
  progress(progress: Omit<Progress, "id">): void;
}

/** The handlers of an engine. */
export interface EngineHandlers {
  /** The Description, or a function of the protocol versions the host serves that returns it. */
  describe: Description | ((protocols: number[]) => Description | Promise<Description>);
  /** Whether the engine takes a question; absent answers `covers` by the Description's answers. */
  covers?: (question: Question, model: Model) => CoversResult | Promise<CoversResult>;
  /** Answers a question; absent answers every run `unsupported`. */
  run?: (request: RunRequest, context: RunContext) => Result | Promise<Result>;
}

/** Where an engine reads and writes; the process's stdio by default. */
export interface ServeOptions {
  /** Host messages come from here. Default: stdin. */
  input?: ReadableStream<Uint8Array>;
  /** Engine messages go here. Default: stdout. */
  output?: WritableStream<Uint8Array>;
  /** The longest request line accepted, in bytes. Default 64 MiB. */
  maxLineBytes?: number;
  /** Where problems are reported. Default: a line on stderr. */
  log?: (message: string) => void;
}

/**
 * An error a handler throws to answer with a given code.
 *
 * @example
 * ```ts
 * import { EngineFailure } from "./mod.ts";
 * throw new EngineFailure("unsupported", "free inputs are not taken");
 * ```
 */
export class EngineFailure extends Error {
  /** The error code the engine answers with. */
  readonly code: ErrorCode;
  /** Makes a failure with `code`. */
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "EngineFailure";
    this.code = code;
  }
}

/**
 * Thrown by a handler when a bound is exhausted; answers with error `budget`.
 *
 * @example
 * ```ts
 * import { BudgetExhausted } from "./mod.ts";
 * throw new BudgetExhausted("memory bound of 64 MiB exhausted");
 * ```
 */
export class BudgetExhausted extends EngineFailure {
  /** Makes a `budget` failure. */
  constructor(message: string) {
    super("budget", message);
    this.name = "BudgetExhausted";
  }
}

/**
 * Serves the protocol on stdin and stdout until stdin closes; then, with the real stdio, exits.
 *
 * @example
 * ```ts ignore
 * import { serveEngine } from "@sandbar/sandbar/engine";
 * await serveEngine({
 *   describe: { name: "echo", version: "1.0.0", protocol: 1, answers: ["holds"], authority: "observed" },
 *   run: (_request, { progress }) => {
 *     progress({ text: "looking" });
 *     return { claim: "holds", strength: "observed" };
 *   },
 * });
 * ```
 */
export async function serveEngine(
  handlers: EngineHandlers,
  options: ServeOptions = {},
): Promise<void> {
  const log = options.log ?? ((message: string) => console.error(`engine: ${message}`));
  const writer = new LineWriter(
    options.output ?? Deno.stdout,
    (_error, lines) => log(`stdout is closed; ${lines} message(s) dropped`),
  );
  const running = new Map<number, AbortController>();
  let description: Description | undefined;

  const send = (message: unknown) => {
    if (!writer.queue(JSON.stringify(message))) log("stdout is closed; message dropped");
  };
  const reply = (id: number, result: unknown) => send({ jsonrpc: "2.0", id, result });
  const fail = (id: number, code: ErrorCode, message: string) =>
    send({ jsonrpc: "2.0", id, error: { code, message } });
  const failWith = (id: number, error: unknown) => {
    if (error instanceof EngineFailure) fail(id, error.code, error.message);
    else fail(id, "internal", error instanceof Error ? error.message : String(error));
  };

  /**
   * Answers request `id` with what `work` returns or throws. A handler that answers without a
   * promise is answered in the same tick, which spares the promises of an async step per request.
   */
  const answer = (id: number, work: () => unknown): Promise<void> | undefined => {
    let outcome: unknown;
    try {
      outcome = work();
    } catch (error) {
      failWith(id, error);
      return;
    }
    if (!isThenable(outcome)) {
      reply(id, outcome);
      return;
    }
    return Promise.resolve(outcome).then(
      (value) => reply(id, value),
      (error) => failWith(id, error),
    );
  };

  const validated = <T>(schema: Parameters<typeof check<T>>[0], value: unknown, label: string) => {
    const checked = check(schema, value, label);
    if (!checked.ok) throw new EngineFailure("internal", `the engine's ${checked.message}`);
    return checked.value;
  };
  /** Validates what a handler answered, after it settles if it is a promise. */
  const settled = <T>(schema: Parameters<typeof check<T>>[0], value: unknown, label: string) =>
    isThenable(value)
      ? Promise.resolve(value).then((v) => validated(schema, v, label))
      : validated(schema, value, label);

  const takes = (question: Question) => {
    if (!description) throw new EngineFailure("unsupported", "describe must come first");
    if (!description.answers.includes(question.kind)) {
      throw new EngineFailure("unsupported", `${question.kind} questions are not taken`);
    }
  };

  const onLine = (text: string) => {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return log(`skipped a line that is not JSON: ${text.slice(0, 200)}`);
    }
    const checked = check(HostMessageSchema, raw, "request");
    if (!checked.ok) {
      const id = (raw as { id?: unknown })?.id;
      if (Number.isInteger(id) && (id as number) >= 1) {
        return fail(id as number, "unsupported", checked.message);
      }
      return log(`skipped an invalid message: ${checked.message}`);
    }
    const message = checked.value;
    switch (message.method) {
      case "cancel":
        return running.get(message.params.id)?.abort(new Error("cancelled by the host"));
      case "describe":
        return void answer(message.id, async () => {
          const d = typeof handlers.describe === "function"
            ? await handlers.describe(message.params.protocols)
            : handlers.describe;
          description = validated(DescriptionSchema, d, "description");
          return description;
        });
      case "covers":
        return void answer(message.id, () => {
          const { question, model } = message.params;
          if (!description) throw new EngineFailure("unsupported", "describe must come first");
          if (!handlers.covers) return { covers: description.answers.includes(question.kind) };
          return settled(CoversResultSchema, handlers.covers(question, model), "covers");
        });
      case "run": {
        const id = message.id;
        const controller = new AbortController();
        running.set(id, controller);
        const deadline = message.params.budget.deadline;
        const timer = deadline === undefined ? undefined : setTimeout(
          () => controller.abort(new Error("the deadline passed")),
          Math.max(0, Date.parse(deadline) - Date.now()),
        );
        const progress = (p: Omit<Progress, "id">) => {
          if (running.get(id) === controller) {
            send({ jsonrpc: "2.0", method: "progress", params: { ...p, id } });
          }
        };
        return void Promise.resolve(answer(id, async () => {
          takes(message.params.question);
          if (!handlers.run) throw new EngineFailure("unsupported", "this engine does not run");
          const result = await handlers.run(message.params, {
            id,
            signal: controller.signal,
            progress,
          });
          return validated(ResultSchema, result, "result");
        })).finally(() => {
          clearTimeout(timer);
          running.delete(id);
        });
      }
    }
  };

  const splitter = new LineSplitter(options.maxLineBytes ?? 64 * 1024 * 1024, {
    line: onLine,
    overlong: (_head, bytes) => log(`skipped a line of ${bytes} bytes, over the limit`),
    partial: (_head, bytes) => log(`stdin ended inside a line of ${bytes} bytes`),
  });
  if (options.input) await readLines(options.input, splitter);
  else await readStdinLines(splitter);
  for (const controller of running.values()) controller.abort(new Error("stdin closed"));
  await writer.close();
  if (!options.input) Deno.exit(0);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}
