/**
 * The tools a turn offers the model are providers behind one interface, so that more can be
 * plugged in (MCP servers, subagent delegation) without touching the loop: each offers its
 * function tools and, for a called name, the {@linkcode Tool} that declares how a call to it is
 * recorded and checked, and executes it.
 *
 * A tool is data plus one function: its arguments' reader ({@linkcode Tool.prepare}), what it
 * needs of the owner's policy ({@linkcode Tool.policy}), its item ({@linkcode ItemPlan}: the
 * item's fields, when it is added, where an error's text goes), and {@linkcode Tool.run}, which
 * answers a {@linkcode ToolResult}. The dispatcher (`registry.ts`) does the rest, the same way
 * for every tool: it adds and finishes the item, checks the policy, and turns what a tool throws
 * into the answer the model reads.
 *
 * What a tool throws, and what becomes of it:
 * - an {@linkcode ApiError} is a **refusal** by the policy or a guard (scope, path, command,
 *   environment): audited under the tool's name, answered as a tool error with the guard's
 *   code, so the model reads it, never an exception out of the loop;
 * - a {@linkcode ToolError} (an {@linkcode ArgumentsError} among them) is a call that cannot run
 *   as asked (bad arguments, an unknown agent, a patch that does not apply): answered with its
 *   code, not audited;
 * - anything else fails the turn, unless the tool declares {@linkcode Tool.failureCode}, the code
 *   such an error is answered with instead.
 *
 * @module
 */

import type { Identity } from "../../../policy/compile.ts";
import type { ActionPolicy } from "../../../policy/on_behalf.ts";
import type { ServerState } from "../../../state.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import type { TurnRecorder } from "../recorder.ts";

/** The environment a turn works in. */
export interface ToolEnvironment {
  /** The environment's id. */
  id: string;
  /** Its workspace on this machine (what `/workspace` stands for). */
  workspace: string;
  /** The variables its processes get (already through the environment guard). */
  env: Record<string, string>;
  /** The argv prefix that takes its network away, or `[]`. */
  networkPrefix: string[];
  /** Its virtual environment of `packages.python` (first on `PATH`), or null. */
  venv: string | null;
}

/** What a tool call runs with. */
export interface ToolContext {
  /** The server. */
  state: ServerState;
  /** The identity that owns the session, or undefined when the policy no longer has it. */
  identity: Identity | undefined;
  /** The environment, or null for a session without one. */
  environment: ToolEnvironment | null;
  /** Aborts when the turn is cancelled. */
  signal: AbortSignal;
  /**
   * The turn's recorder: for what a call does to the session beyond its own item (a client
   * function's `requires_action`, a subagent's `agent_message`, a command's output deltas).
   */
  recorder: TurnRecorder;
  /** The call's item, as the dispatcher (`registry.ts`) keeps it. */
  item: CallItemView;
  /** Attributes of the call's trace span, filled in by the tool (command, exit code). */
  attributes: Record<string, string | number | boolean>;
}

/** The call's item, as a tool sees it: where it is, to refer to it in events of its own. */
export interface CallItemView {
  /** The call's output index. */
  readonly index: number;
  /** The item's id; throws before the item is added. */
  readonly id: string;
}

/**
 * How a call's one item (`command_execution`, `function_call`, `mcp_call`, a subagent call) is
 * recorded. The dispatcher adds it at the output index it reserved for the call and finishes it
 * once; a tool never touches it.
 */
export interface ItemPlan<A> {
  /**
   * When the item is added:
   * - `call`: before the arguments are read, so a call with bad arguments is a failed item;
   * - `valid`: once {@linkcode Tool.prepare} passed, so a bad call has no item (the model still
   *   reads the error);
   * - `completed`: once valid, and already `completed`: the call is then someone else's to
   *   answer (a client function's).
   */
  at: "call" | "valid" | "completed";
  /**
   * The item's fields, `type` among them (the dispatcher adds `id` and `status`). `args` is
   * undefined for an item added at `call` whose arguments did not read.
   */
  fields(call: ToolCall, args: A | undefined): Record<string, unknown>;
  /**
   * Where the call's answer goes:
   * - `output` or `error`: that field of the call's own item takes an error's text (a
   *   `command_execution`'s `output`, an `mcp_call`'s `error`); a result's fields are what
   *   {@linkcode ToolResult.record} gives;
   * - `function_call_output`: a `function_call_output` item follows the call's, with the
   *   answer's text as its `output`, or as its `error` when the call failed;
   * - `status`: only the item's `status` says how the call went (the model reads the answer).
   */
  answerIn: "output" | "error" | "function_call_output" | "status";
  /**
   * Items recorded before the call's own, each at an output index of its own and already
   * completed, once the arguments are valid (`send_input`'s `interrupt_subagent_call`).
   */
  precededBy?(args: A): Record<string, unknown>[];
}

/** What a call that ran answers. */
export interface ToolResult {
  /** What the model reads. */
  output: string;
  /** The item's final status; `completed` unless given. */
  status?: "completed" | "failed" | "incomplete";
  /**
   * Fields of the item that holds the answer (the call's own, or the `function_call_output`
   * that follows it), on top of what the dispatcher puts there.
   */
  record?: Record<string, unknown>;
}

/** One function tool: its declaration and its execution. */
export interface Tool<A = unknown> {
  /** What a call needs of the owner's policy, checked by the dispatcher before `run`. */
  policy?: ActionPolicy;
  /**
   * Read the call's arguments, and whatever must hold (or be set up) before the item is added
   * at `valid` or `completed`; throws a {@linkcode ToolError} for a call that cannot run.
   */
  prepare(call: ToolCall, context: ToolContext): A;
  /** How the call's item is recorded. */
  item: ItemPlan<A>;
  /**
   * The code an error that is neither a refusal nor a {@linkcode ToolError} is answered with;
   * without it, such an error fails the turn.
   */
  failureCode?: string;
  /** Run the call. */
  run(args: A, context: ToolContext): Promise<ToolResult>;
}

/** One call the model made. */
export interface ToolCall {
  /** The call id. */
  callId: string;
  /** The function's name. */
  name: string;
  /** Its arguments, as JSON text. */
  arguments: string;
}

/**
 * The item of a call the model made to a plain function (`apply_patch`, a client's function):
 * a `function_call` as the model sent it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { functionCallFields } from "./tool.ts";
 * const call = { callId: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' };
 * assert.deepEqual(functionCallFields(call), {
 *   type: "function_call",
 *   call_id: "call_1",
 *   name: "get_weather",
 *   arguments: '{"city":"Paris"}',
 * });
 * ```
 */
export function functionCallFields(call: ToolCall): Record<string, unknown> {
  return {
    type: "function_call",
    call_id: call.callId,
    name: call.name,
    arguments: call.arguments,
  };
}

/** A source of tools. */
export interface ToolProvider {
  /** The function tools offered to the model. */
  definitions(): FunctionToolDefinition[];
  /** The tool a call to `name` runs, or undefined when `name` is not this provider's. */
  tool(name: string): Tool<unknown> | undefined;
}

/**
 * The text a model reads for a refused or failed call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolError } from "./tool.ts";
 * assert.equal(toolError("command_not_allowed", "rm is not allowed"), "error (command_not_allowed): rm is not allowed");
 * ```
 */
export function toolError(code: string, message: string): string {
  return `error (${code}): ${message}`;
}

/**
 * Parse a call's JSON arguments into an object, or throw an {@linkcode ArgumentsError} (with
 * `code`) for the model.
 */
export function parseArguments(
  text: string,
  code = "invalid_arguments",
): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text || "{}");
  } catch {
    throw new ArgumentsError("the arguments are not valid JSON", code);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new ArgumentsError("the arguments must be a JSON object", code);
  }
  return value as Record<string, unknown>;
}

/**
 * A call that cannot run as asked: answered to the model as a tool error with `code`, not
 * audited (a refusal by a guard is an `ApiError`, which is).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ToolError, toolError } from "./tool.ts";
 * const e = new ToolError("not_found", "there is no agent with id 'a'");
 * assert.equal(toolError(e.code, e.message), "error (not_found): there is no agent with id 'a'");
 * ```
 */
export class ToolError extends Error {
  /** The code the model reads. */
  readonly code: string;
  /** Make one. */
  constructor(code: string, message: string) {
    super(message);
    this.name = "ToolError";
    this.code = code;
  }
}

/** Arguments a tool cannot use (`invalid_arguments` unless the tool says otherwise). */
export class ArgumentsError extends ToolError {
  /** Make one. */
  constructor(message: string, code = "invalid_arguments") {
    super(code, message);
    this.name = "ArgumentsError";
  }
}
