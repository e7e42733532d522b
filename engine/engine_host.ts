/**
 * The host: starts one engine from its manifest entry, checks its Description, and sends it
 * `covers` and `run` requests, deciding a verdict for every result.
 *
 * @module
 */
import { type Diagnostic, RpcClient } from "./rpc_client.ts";
import { descriptionMismatches, SERVED_PROTOCOLS } from "./handshake.ts";
import { EngineError } from "./errors.ts";
import { type EngineEntry, engineEnv } from "./manifest.ts";
import { describeEnd, EngineProcess } from "./engine_process.ts";
import { parseRfc3339 } from "./rfc3339.ts";
import { BudgetSchema, ModelSchema, QuestionSchema } from "./schema.ts";
import type {
  Bound,
  Budget,
  CoversResult,
  Description,
  Model,
  Progress,
  Question,
  Result,
} from "./types.ts";
import { check } from "./validate.ts";
import { adjudicate, type Verdict } from "./verdict.ts";

/** Limits and timeouts of a host. Every field has a default. */
export interface HostOptions {
  /** The longest stdout line accepted, in bytes. Default 4 MiB. */
  maxLineBytes?: number;
  /** How much of stderr is kept to quote in errors, in bytes. Default 16 KiB. */
  stderrBytes?: number;
  /** The wait between each step of ending an engine: cancel, close stdin, SIGTERM, SIGKILL.
   * Default 2000 ms. */
  graceMs?: number;
  /** How long `describe` may take. Default 10 000 ms. */
  describeTimeoutMs?: number;
  /** How long `covers` may go without an answer or progress. Default 10 000 ms. */
  coversTimeoutMs?: number;
  /** How long `run` may go without an answer or progress. Default 60 000 ms. */
  runIdleMs?: number;
  /** Requests in flight at once with a concurrent engine. Default 64. */
  maxInFlight?: number;
  /** Called with each problem recorded about the engine's output. */
  onDiagnostic?: (diagnostic: Diagnostic) => void;
}

/** Options of one `run`. */
export interface RunOptions {
  /** Called with each progress notification while the run is live. */
  onProgress?: (progress: Progress) => void;
  /** Cancels the run: the host sends `cancel` and rejects with code `cancelled`. */
  signal?: AbortSignal;
  /** Overrides {@linkcode HostOptions.runIdleMs} for this run. */
  idleMs?: number;
}

/** What a run produced: the engine's claim and the host's verdict on it. */
export interface RunOutcome {
  /** The result as the engine sent it. */
  result: Result;
  /** What stands of it. */
  verdict: Verdict;
  /** The bounds the host sent. */
  bounds: Bound[];
}

/**
 * A running engine behind External Engine Protocol v1: {@linkcode EngineHost.start} spawns it
 * from a manifest entry and checks its Description; `covers` and `run` ask it questions. A
 * complete program using it is under "Host from code" in `docs/engine.md` (run by
 * `tests/engine/docs_test.ts`; an example here could not run without permission to spawn).
 */
export class EngineHost implements AsyncDisposable {
  /** The manifest entry the engine was started from. */
  readonly entry: EngineEntry;
  readonly #process: EngineProcess;
  readonly #client: RpcClient;
  readonly #options: Required<Omit<HostOptions, "onDiagnostic">>;
  readonly #coversOptions: { idleMs: number };
  #description: Description | undefined;
  #shutdown: Promise<Deno.CommandStatus> | undefined;

  private constructor(entry: EngineEntry, options: HostOptions) {
    this.entry = entry;
    this.#options = {
      maxLineBytes: options.maxLineBytes ?? 4 * 1024 * 1024,
      stderrBytes: options.stderrBytes ?? 16 * 1024,
      graceMs: options.graceMs ?? 2000,
      describeTimeoutMs: options.describeTimeoutMs ?? 10_000,
      coversTimeoutMs: options.coversTimeoutMs ?? 10_000,
      runIdleMs: options.runIdleMs ?? 60_000,
      maxInFlight: options.maxInFlight ?? 64,
    };
    this.#coversOptions = { idleMs: this.#options.coversTimeoutMs };
    this.#client = new RpcClient(entry.name, {
      graceMs: this.#options.graceMs,
      send: (line) => this.#process.post(line),
      onUnresponsive: () => void this.#stop(),
      onDiagnostic: options.onDiagnostic,
    });
    try {
      this.#process = new EngineProcess(
        { command: entry.command, cwd: entry.cwd, env: engineEnv(entry) },
        this.#options,
        this.#client.sink,
      );
    } catch (error) {
      throw new EngineError(
        "spawn",
        entry.name,
        `cannot start ${JSON.stringify(entry.command)}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    this.#process.ended.then((end) => {
      this.#client.fail(new EngineError("exited", entry.name, describeEnd(end)));
      // Stdout closed on a live process: it can say nothing more, so it goes.
      if (!end.status) void this.#stop();
    });
  }

  /**
   * Starts the engine and runs `describe`. Refuses an engine whose Description does not match the
   * entry, with a message naming each mismatch, and leaves no process behind when it does.
   *
   * @throws {EngineError} `spawn`, `refused`, or the code of whatever ended the handshake.
   */
  static async start(entry: EngineEntry, options: HostOptions = {}): Promise<EngineHost> {
    const host = new EngineHost(entry, options);
    try {
      const description = await host.#client.request(
        "describe",
        { protocols: SERVED_PROTOCOLS },
        { idleMs: host.#options.describeTimeoutMs },
      ) as Description;
      const mismatches = descriptionMismatches(entry, description);
      if (mismatches.length > 0) {
        throw new EngineError(
          "refused",
          entry.name,
          `its Description does not match the manifest:\n  ${mismatches.join("\n  ")}`,
        );
      }
      host.#description = description;
      host.#client.concurrency = description.concurrent ? host.#options.maxInFlight : 1;
      return host;
    } catch (error) {
      await host.close();
      throw error;
    }
  }

  /** The engine's Description, as checked at start. */
  get description(): Description {
    return this.#description!;
  }

  /** Problems recorded about what the engine wrote on stdout, oldest first. */
  get diagnostics(): readonly Diagnostic[] {
    return this.#client.diagnostics;
  }

  /** Whether the engine wrote anything on stdout that is not a valid engine message. */
  get pollutingStdout(): boolean {
    return this.#client.pollutingStdout;
  }

  /** The engine's process id. */
  get pid(): number {
    return this.#process.pid;
  }

  /** The last bytes the engine wrote on stderr. */
  stderrTail(): string {
    return this.#process.stderrTail();
  }

  /** Asks whether the engine takes a question about a model. */
  covers(question: Question, model: Model): Promise<CoversResult> {
    let params;
    try {
      params = { question: this.#valid(question), model: this.#model(model) };
    } catch (error) {
      return Promise.reject(error);
    }
    // The client's promise itself: an async wrapper would cost a promise and two turns per call.
    return this.#client.request("covers", params, this.#coversOptions) as Promise<CoversResult>;
  }

  /**
   * Runs a question. The bounds the entry declares go out set to the budget's limits (a limit the
   * budget does not give is 0, which leaves the bound open). The budget's `deadline` is the
   * host's to enforce: at the deadline the run fails with code `deadline`, `cancel` is sent, and
   * an engine that does not answer within the grace period is ended.
   */
  async run(
    question: Question,
    model: Model,
    budget: Budget = {},
    options: RunOptions = {},
  ): Promise<RunOutcome> {
    const checkedBudget = check(BudgetSchema, budget, "budget");
    if (!checkedBudget.ok) throw new EngineError("invalid", this.entry.name, checkedBudget.message);
    const bounds = (this.entry.bounds ?? []).map((name) => ({ name, limit: budget[name] ?? 0 }));
    const deadline = budget.deadline === undefined ? undefined : parseRfc3339(budget.deadline);
    if (deadline !== undefined && deadline <= Date.now()) {
      throw new EngineError(
        "deadline",
        this.entry.name,
        `the deadline ${budget.deadline} has passed`,
      );
    }
    const params = { question: this.#valid(question), model: this.#model(model), bounds, budget };
    const result = await this.#client.request("run", params, {
      onProgress: options.onProgress,
      signal: options.signal,
      idleMs: options.idleMs ?? this.#options.runIdleMs,
      deadline,
    }) as Result;
    const verdict = adjudicate(result, {
      question: question.kind,
      authority: this.entry.authority,
      witness: this.entry.witness,
      bounds,
    });
    return { result, verdict, bounds };
  }

  /**
   * Ends the engine: pending requests fail with code `closed`, then stdin closes, and SIGTERM and
   * SIGKILL follow after the grace period if it does not exit. Resolves with the exit status.
   */
  close(): Promise<Deno.CommandStatus> {
    this.#client.fail(new EngineError("closed", this.entry.name, "the host closed the engine"));
    return this.#stop();
  }

  /** Same as {@linkcode close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #stop(): Promise<Deno.CommandStatus> {
    this.#shutdown ??= this.#process.shutdown(this.#options.graceMs);
    return this.#shutdown;
  }

  #valid(question: Question): Question {
    const checked = check(QuestionSchema, question, "question");
    if (!checked.ok) throw new EngineError("invalid", this.entry.name, checked.message);
    return checked.value;
  }

  /** The model in the forms the entry declares; other forms are not sent. */
  #model(model: Model): Model {
    const checked = check(ModelSchema, model, "model");
    if (!checked.ok) throw new EngineError("invalid", this.entry.name, checked.message);
    const forms = this.entry.model ?? [];
    const sent: Model = {};
    if (forms.includes("sources") && checked.value.sources) sent.sources = checked.value.sources;
    if (checked.value.graphs && forms.includes(`graphs:${checked.value.graphs.version}`)) {
      sent.graphs = checked.value.graphs;
    }
    if (!sent.sources && !sent.graphs) {
      throw new EngineError(
        "invalid",
        this.entry.name,
        `the model has none of the forms the engine takes (${forms.join(", ") || "none declared"})`,
      );
    }
    return sent;
  }
}
