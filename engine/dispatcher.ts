/**
 * The engine side of the protocol, without its transport: {@linkcode EngineDispatcher} takes one
 * host message line at a time, calls the engine's handlers, and hands every line it answers with
 * to a `send` function. It knows nothing of stdin or stdout (`stdio_transport.ts` does).
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
 * - Lines that are not host messages are reported through `log` and skipped.
 *
 * @module
 */
import { EngineFailure } from "./engine_failure.ts";
import { errorLine, notificationLine, resultLine } from "./jsonrpc.ts";
import { setLongTimeout } from "./long_timer.ts";
import { parseRfc3339 } from "./rfc3339.ts";
import {
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
import { check } from "./validate.ts";

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
  /** Aborts on `cancel`, at the budget's deadline, and when the input ends. */
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

/** Where a dispatcher's output goes. */
export interface DispatcherOptions {
  /** Queues one engine message line (without `\n`) for the host. */
  send(line: string): void;
  /** Where host messages that cannot be answered are reported. */
  log(message: string): void;
}

type Schema<T> = Parameters<typeof check<T>>[0];

/**
 * Answers host messages with an engine's handlers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EngineDispatcher } from "./dispatcher.ts";
 * const sent: string[] = [];
 * const dispatcher = new EngineDispatcher(
 *   { describe: { name: "e", version: "1", protocol: 1, answers: ["holds"] } },
 *   { send: (line) => sent.push(line), log: () => {} },
 * );
 * dispatcher.receive('{"jsonrpc":"2.0","id":1,"method":"describe","params":{"protocols":[1]}}');
 * dispatcher.receive('{"jsonrpc":"2.0","id":2,"method":"run","params":{}}');
 * // Handlers that answer without a promise are answered at once.
 * assert.equal(JSON.parse(sent[0]).result.name, "e");
 * assert.equal(JSON.parse(sent[1]).error.code, "unsupported");
 * assert.match(JSON.parse(sent[1]).error.message, /request\.params\.question: /);
 * ```
 */
export class EngineDispatcher {
  readonly #handlers: EngineHandlers;
  readonly #send: (line: string) => void;
  readonly #log: (message: string) => void;
  readonly #running = new Map<number, AbortController>();
  #description: Description | undefined;

  /** Makes a dispatcher that answers with `handlers` through `options.send`. */
  constructor(handlers: EngineHandlers, options: DispatcherOptions) {
    this.#handlers = handlers;
    this.#send = options.send;
    this.#log = options.log;
  }

  /** Handles one host message line. Never throws: every failure is an answer or a log line. */
  receive(text: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return this.#log(`skipped a line that is not JSON: ${text.slice(0, 200)}`);
    }
    const checked = check(HostMessageSchema, raw, "request");
    if (!checked.ok) {
      const id = (raw as { id?: unknown })?.id;
      if (Number.isInteger(id) && (id as number) >= 1) {
        return this.#fail(id as number, "unsupported", checked.message);
      }
      return this.#log(`skipped an invalid message: ${checked.message}`);
    }
    const message = checked.value;
    switch (message.method) {
      case "cancel":
        return this.#running.get(message.params.id)?.abort(new Error("cancelled by the host"));
      case "describe":
        return void this.#answer(message.id, () => this.#describe(message.params.protocols));
      case "covers":
        return void this.#answer(
          message.id,
          () => this.#covers(message.params.question, message.params.model),
        );
      case "run":
        return this.#run(message.id, message.params);
    }
  }

  /** Aborts every run in progress with `reason`; their answers still go out. */
  abortAll(reason: Error): void {
    for (const controller of this.#running.values()) controller.abort(reason);
  }

  #describe(protocols: number[]): Description | Promise<Description> {
    const describe = this.#handlers.describe;
    const value = typeof describe === "function" ? describe(protocols) : describe;
    const checked = settled(DescriptionSchema, value, "description");
    const remember = (description: Description) => this.#description = description;
    return isThenable(checked) ? checked.then(remember) : remember(checked);
  }

  #covers(question: Question, model: Model): unknown {
    if (!this.#description) throw new EngineFailure("unsupported", "describe must come first");
    if (!this.#handlers.covers) {
      return { covers: this.#description.answers.includes(question.kind) };
    }
    return settled(CoversResultSchema, this.#handlers.covers(question, model), "covers");
  }

  #run(id: number, request: RunRequest): void {
    const controller = new AbortController();
    this.#running.set(id, controller);
    const deadline = request.budget.deadline;
    const stopTimer = deadline === undefined ? undefined : setLongTimeout(
      () => controller.abort(new Error("the deadline passed")),
      (parseRfc3339(deadline) ?? 0) - Date.now(),
    );
    const progress = (p: Omit<Progress, "id">) => {
      if (this.#running.get(id) === controller) {
        this.#send(notificationLine("progress", { ...p, id }));
      }
    };
    void Promise.resolve(this.#answer(id, async () => {
      this.#takes(request.question);
      if (!this.#handlers.run) throw new EngineFailure("unsupported", "this engine does not run");
      const result = await this.#handlers.run(request, { id, signal: controller.signal, progress });
      return validated(ResultSchema, result, "result");
    })).finally(() => {
      stopTimer?.();
      this.#running.delete(id);
    });
  }

  #takes(question: Question): void {
    if (!this.#description) throw new EngineFailure("unsupported", "describe must come first");
    if (!this.#description.answers.includes(question.kind)) {
      throw new EngineFailure("unsupported", `${question.kind} questions are not taken`);
    }
  }

  /**
   * Answers request `id` with what `work` returns or throws. A handler that answers without a
   * promise is answered in the same tick, which spares the promises of an async step per request.
   */
  #answer(id: number, work: () => unknown): Promise<void> | undefined {
    let outcome: unknown;
    try {
      outcome = work();
    } catch (error) {
      this.#failWith(id, error);
      return;
    }
    if (!isThenable(outcome)) {
      this.#send(resultLine(id, outcome));
      return;
    }
    return Promise.resolve(outcome).then(
      (value) => this.#send(resultLine(id, value)),
      (error) => this.#failWith(id, error),
    );
  }

  #fail(id: number, code: ErrorCode, message: string): void {
    this.#send(errorLine(id, { code, message }));
  }

  #failWith(id: number, error: unknown): void {
    if (error instanceof EngineFailure) this.#fail(id, error.code, error.message);
    else this.#fail(id, "internal", error instanceof Error ? error.message : String(error));
  }
}

function validated<T>(schema: Schema<T>, value: unknown, label: string): T {
  const checked = check(schema, value, label);
  if (!checked.ok) throw new EngineFailure("internal", `the engine's ${checked.message}`);
  return checked.value;
}

/** Validates what a handler answered, after it settles if it is a promise. */
function settled<T>(schema: Schema<T>, value: unknown, label: string): T | Promise<T> {
  return isThenable(value)
    ? Promise.resolve(value).then((v) => validated(schema, v, label))
    : validated(schema, value, label);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}
