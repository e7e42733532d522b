/**
 * The tools a turn offers the model are providers behind one interface, so that more can be
 * plugged in (MCP servers, subagent delegation) without touching the loop: each says which
 * function tools it offers and runs the calls to them, recording its own items and events
 * through the turn's recorder, and answers the text the model sees.
 *
 * A refusal by a guard (scope, path, command, environment) is not an exception out of the
 * loop: the provider answers it as a tool error carrying the guard's code, which the model
 * reads, and the refusal is audited. The dispatcher (`registry.ts`) makes the policy checks a
 * provider declares and audits refusals, so providers do neither themselves.
 *
 * @module
 */

import type { ApiError } from "../../../errors.ts";
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
  /** Where the call records its items and events. */
  recorder: TurnRecorder;
  /**
   * Check what the provider declares the call needs of the owner's policy (its
   * {@linkcode ToolProvider.policy}); throws the refusal. Set by the dispatcher
   * (`registry.ts`), called by the tool when its arguments are known.
   */
  authorize(): void;
  /** Audit a refusal of this call (by {@linkcode ToolContext.authorize} or a guard). */
  refused(error: ApiError): void;
  /** The item that records this call, kept by the dispatcher (`registry.ts`). */
  item: CallItem;
  /** Attributes of the call's trace span, filled in by the tool (command, exit code). */
  attributes: Record<string, string | number | boolean>;
}

/**
 * The one item that records a tool call (`command_execution`, `function_call`, `mcp_call`, a
 * subagent call), at the output index the dispatcher reserved for the call. The tool says when
 * it is added and what it holds; the dispatcher adds and finishes it, and finishes one a tool
 * left open (an exception) as `failed`, or `incomplete` when the turn was cancelled.
 */
export interface CallItem {
  /** The call's output index. */
  readonly index: number;
  /** The item as added, or null before {@linkcode CallItem.open}. */
  readonly current: Record<string, unknown> | null;
  /** Add the item: a new id, then `fields`, then `status` (`in_progress` unless given); once. */
  open(fields: Record<string, unknown>, status?: string): Record<string, unknown>;
  /** Finish the item with `fields` on top of it (its final `status` among them); once. */
  done(fields?: Record<string, unknown>): void;
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

/** A source of tools. */
export interface ToolProvider {
  /** The function tools offered to the model. */
  definitions(): FunctionToolDefinition[];
  /** Whether a call to `name` is this provider's. */
  handles(name: string): boolean;
  /** What a call to `name` needs of the owner's policy, if anything (checked by the dispatcher). */
  policy?(name: string): ActionPolicy | undefined;
  /** Run a call; answers what the model reads as the call's output. */
  run(call: ToolCall, context: ToolContext): Promise<string>;
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

/** Parse a call's JSON arguments into an object, or throw a message for the model. */
export function parseArguments(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text || "{}");
  } catch {
    throw new ArgumentsError("the arguments are not valid JSON");
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new ArgumentsError("the arguments must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** Arguments a tool cannot use. */
export class ArgumentsError extends Error {
  /** Make one. */
  constructor(message: string) {
    super(message);
    this.name = "ArgumentsError";
  }
}
