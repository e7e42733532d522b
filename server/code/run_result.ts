/**
 * Turning a run's events into the wire's CodeResult: stdout and stderr (the last 16 MiB of each),
 * the results with their MIME bundles, the error with its traceback, and the exit code.
 *
 * @module
 */

import { TailBuffer } from "../../shared/tail_buffer.ts";
import type { BridgeEvent } from "./bridge.ts";
import type { RunOutcome } from "./contexts.ts";

/** Bytes of each stream a result keeps (the last ones). */
export const MAX_STREAM_BYTES = 16 * 1024 * 1024;

/** Exit code of a run that passed its timeout (as coreutils' `timeout` says it). */
const TIMEOUT_EXIT_CODE = 124;

/** A display output or the last expression's value, with its MIME bundle. */
export interface ResultRecord {
  /** `{ "text/plain": "...", "image/png": "<base64>", ... }`. */
  data: Record<string, unknown>;
  /** True for the value of the last expression (`execute_result`), false for a display. */
  is_main_result: boolean;
}

/** An exception raised by the run. */
export interface ErrorRecord {
  /** The exception's class (`ZeroDivisionError`, `TypeError`, `KeyboardInterrupt`). */
  name: string;
  /** Its message. */
  value: string;
  /** The traceback lines, terminal colours removed. */
  traceback: string[];
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;?]*[ -\/]*[@-~]/g;

/** Remove terminal colour codes (IPython colours its tracebacks). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/** The wire form of one event, as a streamed line says it. */
export function eventLine(e: BridgeEvent): Record<string, unknown> {
  switch (e.event) {
    case "stdout":
    case "stderr":
      return { type: e.event, text: e.text };
    case "result":
      return { type: "result", data: e.data, is_main_result: e.main };
    case "error":
      return { type: "error", ...errorRecord(e) };
  }
}

function errorRecord(e: Extract<BridgeEvent, { event: "error" }>): ErrorRecord {
  return { name: e.name, value: e.value, traceback: e.traceback.map(stripAnsi) };
}

/**
 * The exit code a failed run reports: 1, as a Python program that raised; but `SystemExit(n)`
 * (`sys.exit(n)`) keeps its own status, as it would in `python3 -c`, so `exitCode` means the
 * same in a context as in a one-shot run.
 */
function errorExitCode(error: ErrorRecord): number {
  if (error.name !== "SystemExit") return 1;
  if (error.value === "" || error.value === "None") return 0;
  const n = Number(error.value);
  return Number.isInteger(n) ? n & 0xff : 1;
}

/** Collects a run's events into its result. */
export class RunCollector {
  readonly #out = {
    stdout: new TailBuffer(MAX_STREAM_BYTES),
    stderr: new TailBuffer(MAX_STREAM_BYTES),
  };
  readonly #encoder = new TextEncoder();
  readonly #t0 = performance.now();
  readonly results: ResultRecord[] = [];
  error: ErrorRecord | null = null;
  /** A persistent shell's exit status of its last command, when not 0. */
  #status = 0;

  /** Take one event. */
  add(e: BridgeEvent): void {
    if (e.event === "result") {
      this.results.push({ data: e.data, is_main_result: e.main });
    } else if (e.event !== "error") {
      this.#out[e.event].push(this.#encoder.encode(e.text));
    } else if (e.name === "ExitCode") {
      this.#status = Number(e.value) || 1;
    } else {
      this.error = errorRecord(e);
    }
  }

  /** Whether the event is a shell's exit status (a result field, not a streamed error). */
  static isStatus(e: BridgeEvent): boolean {
    return e.event === "error" && e.name === "ExitCode";
  }

  /** The CodeResult, as the wire names its fields. */
  finish(
    language: string,
    contextId: string,
    outcome: RunOutcome,
  ): Record<string, unknown> {
    const stdout = this.#out.stdout.text();
    let stderr = this.#out.stderr.text();
    if (this.error && this.error.traceback.length > 0) {
      stderr += (stderr && !stderr.endsWith("\n") ? "\n" : "") +
        this.error.traceback.join("\n") + "\n";
    } else if (this.error) {
      stderr += `${this.error.name}: ${this.error.value}\n`;
    }
    const exitCode = outcome.timed_out
      ? TIMEOUT_EXIT_CODE
      : this.error
      ? errorExitCode(this.error)
      : this.#status;
    return {
      text: stdout.trimEnd(),
      stdout,
      stderr,
      exit_code: exitCode,
      execution_time: (performance.now() - this.#t0) / 1000,
      output_files: outcome.output_files,
      results: this.results,
      error: this.error,
      language,
      context_id: contextId,
      execution_count: outcome.execution_count,
      timed_out: outcome.timed_out,
      restarted: outcome.restarted,
      stdout_dropped: this.#out.stdout.dropped,
      stderr_dropped: this.#out.stderr.dropped,
    };
  }
}
