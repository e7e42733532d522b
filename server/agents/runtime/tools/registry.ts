/**
 * The one place a turn's tool call is dispatched. Each tool declares how its calls are checked
 * and recorded (`tool.ts`: its arguments' reader, its policy, its {@linkcode ItemPlan}) and
 * executes; everything else happens here, once, the same way for every tool:
 *
 * 1. find the tool of the called name (none: `unknown_tool`, and no item), open the call's trace
 *    span and reserve the call's output index;
 * 2. read the arguments (`prepare`); add the call's item at that index when the plan says (`call`:
 *    before the arguments are read, so a bad call is a failed item; `valid`: only once they are,
 *    so a bad call has none; `completed`: once they are, already completed, the call being the
 *    client's to answer), after the items the plan puts before it;
 * 3. check what the tool declares it needs of the owner's policy (a scope, the endpoint it runs
 *    as; `server/policy/on_behalf.ts`), then run it;
 * 4. turn what it threw into the answer: an `ApiError` is a refusal, audited under the tool's name;
 *    a `ToolError` is a call that could not run as asked; either is answered as a tool error
 *    (`error (<code>): …`) and recorded where the plan's `answerIn` says (the item's `output` or
 *    `error`, a following `function_call_output` item, or only its `failed` status). Anything else
 *    is answered with the tool's `failureCode` when it declares one, and otherwise finishes the
 *    item (`failed`, or `incomplete` when the turn was cancelled) and fails the turn;
 * 5. finish the item with the result (and add the `function_call_output` that carries it, for the
 *    tools that answer there), and end the span.
 *
 * So the event stream of a call is decided by its tool's declaration alone, and no tool adds,
 * finishes or audits anything of its own call. What stays with a tool is what its execution does
 * to the session beyond its call's item, because that is its output rather than its record: a
 * command's output deltas (which name the call's item), a client function's `requires_action`,
 * and the `agent_message` items a `wait` hands over from the subagents (added while the call
 * runs, before its item is finished, and marking each message delivered).
 *
 * @module
 */

import { ApiError } from "../../../errors.ts";
import type { Identity } from "../../../policy/compile.ts";
import { requireAction } from "../../../policy/on_behalf.ts";
import type { ServerState } from "../../../state.ts";
import { newId } from "../../ids.ts";
import type { TurnRecorder } from "../recorder.ts";
import type { TraceBuilder } from "../traces.ts";
import {
  type CallItemView,
  type ItemPlan,
  type Tool,
  type ToolCall,
  type ToolContext,
  type ToolEnvironment,
  ToolError,
  toolError,
  type ToolProvider,
  type ToolResult,
} from "./tool.ts";

export type { ActionPolicy } from "../../../policy/on_behalf.ts";

/** What every call of a turn runs with. */
export interface DispatchSetup {
  /** The server. */
  state: ServerState;
  /** The session's owner, or undefined when the policy no longer has it. */
  identity: Identity | undefined;
  /** The environment, or null. */
  environment: ToolEnvironment | null;
  /** Aborts when the turn is cancelled. */
  signal: AbortSignal;
  /** The turn's recorder. */
  recorder: TurnRecorder;
  /** The trace being built. */
  trace: TraceBuilder;
  /** Writes a refusal to the audit log. */
  audit(tool: string, error: ApiError): void;
}

/**
 * Run one call: the tool of its name runs it, under the policy and with the item it declares;
 * a name no provider offers answers `unknown_tool`. Answers what the model reads as the call's
 * output.
 */
export async function dispatchToolCall(
  tools: readonly ToolProvider[],
  call: ToolCall,
  setup: DispatchSetup,
): Promise<string> {
  let tool: Tool<unknown> | undefined;
  for (const provider of tools) if ((tool = provider.tool(call.name))) break;
  const span = setup.trace.span(`tool ${call.name}`, "internal");
  const attributes = { "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.callId };
  if (!tool) {
    const output = toolError("unknown_tool", `there is no tool named '${call.name}'`);
    span.end(attributes, output);
    return output;
  }
  const plan = tool.item;
  const item = new KeptItem(setup.recorder, setup.recorder.nextOutputIndex());
  const context: ToolContext = {
    state: setup.state,
    identity: setup.identity,
    environment: setup.environment,
    signal: setup.signal,
    recorder: setup.recorder,
    item: item.view,
    attributes,
  };
  let result: ToolResult;
  try {
    let args: unknown;
    try {
      args = tool.prepare(call, context);
    } catch (e) {
      if (plan.at === "call") item.add(plan.fields(call, undefined));
      throw e;
    }
    for (const fields of plan.precededBy?.(args) ?? []) recordCompleted(setup.recorder, fields);
    item.add(plan.fields(call, args), plan.at === "completed");
    if (tool.policy) requireAction(setup.state.policy, setup.identity, tool.policy);
    result = await tool.run(args, context);
  } catch (e) {
    const code = e instanceof ApiError || e instanceof ToolError ? e.code : tool.failureCode;
    if (code === undefined) {
      const message = (e as Error).message;
      const field = plan.answerIn === "output" || plan.answerIn === "error" ? plan.answerIn : "";
      item.finish({
        ...(field && item.added ? { [field]: message } : {}),
        status: setup.signal.aborted ? "incomplete" : "failed",
      });
      span.end(attributes, message);
      throw e;
    }
    if (e instanceof ApiError) setup.audit(call.name, e);
    const output = toolError(code, (e as Error).message);
    result = { output, status: "failed", record: errorRecord(plan, output) };
  }
  record(plan, call, item, setup.recorder, result);
  span.end(attributes, result.output.startsWith("error") ? result.output : undefined);
  return result.output;
}

/** Where an error's text goes in the item that holds the answer. */
function errorRecord(plan: ItemPlan<unknown>, text: string): Record<string, unknown> {
  if (plan.answerIn === "output") return { output: text };
  if (plan.answerIn === "error") return { error: text };
  return {};
}

/** Finish the call's item with the result, and add the `function_call_output` that carries it. */
function record(
  plan: ItemPlan<unknown>,
  call: ToolCall,
  item: KeptItem,
  recorder: TurnRecorder,
  result: ToolResult,
): void {
  const status = result.status ?? "completed";
  if (plan.answerIn !== "function_call_output") {
    item.finish({ ...result.record, status });
    return;
  }
  item.finish({ status });
  if (!item.added) return;
  const ok = status === "completed";
  recorder.addItem({
    id: newId("item"),
    type: "function_call_output",
    call_id: call.callId,
    output: ok ? result.output : null,
    error: ok ? null : result.output,
    status,
    ...result.record,
  }, null);
}

/** An item that is not the call's own, added at an output index of its own, completed. */
function recordCompleted(recorder: TurnRecorder, fields: Record<string, unknown>): void {
  const index = recorder.nextOutputIndex();
  const added = recorder.addItem({ id: newId("item"), ...fields, status: "in_progress" }, index);
  recorder.itemDone({ ...added, status: "completed" }, index);
}

/** The call's item at the output index reserved for it: added once, finished once. */
class KeptItem {
  readonly #recorder: TurnRecorder;
  readonly #index: number;
  #added: Record<string, unknown> | null = null;
  #finished = false;

  constructor(recorder: TurnRecorder, index: number) {
    this.#recorder = recorder;
    this.#index = index;
  }

  /** What the tool sees of it. */
  get view(): CallItemView {
    // deno-lint-ignore no-this-alias
    const self = this;
    return {
      index: this.#index,
      get id() {
        if (self.#added === null) throw new Error("the call's item is not added yet");
        return self.#added.id as string;
      },
    };
  }

  /** Whether it was added. */
  get added(): boolean {
    return this.#added !== null;
  }

  /** Add it (a new id, the fields, `in_progress`), or add it already completed and finish it. */
  add(fields: Record<string, unknown>, completed = false): void {
    const { id: _, ...rest } = fields;
    this.#added = this.#recorder.addItem(
      { id: newId("item"), ...rest, status: completed ? "completed" : "in_progress" },
      this.#index,
    );
    if (completed) this.finish({});
  }

  /** Finish it with `fields` on top of it, once; nothing when it was not added or is finished. */
  finish(fields: Record<string, unknown>): void {
    if (this.#added === null || this.#finished) return;
    this.#finished = true;
    this.#recorder.itemDone({ ...this.#added, ...fields }, this.#index);
  }
}
