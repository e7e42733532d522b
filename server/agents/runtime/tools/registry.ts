/**
 * The one place a turn's tool call is dispatched: it finds the provider of the called name,
 * builds the call's context, opens the call's trace span, reserves the call's output index and
 * keeps the call's item, and gives the tool the two policy steps it must not do on its own:
 * `authorize()` checks what the provider declares the call needs (a scope, the endpoint it runs
 * as; `server/policy/on_behalf.ts`), and `refused(error)` audits a refusal under the tool's name.
 * Each tool file is then its definition and its execution (its arguments, its guards, what its
 * item holds), with no check, audit or item bookkeeping of its own.
 *
 * The item (`context.item`, a {@linkcode CallItem}) is added and finished here, once, at the
 * reserved index; one a tool leaves open when it throws is finished here as `failed`, or
 * `incomplete` when the turn was cancelled. What the tool still decides, because clients see it
 * and the tests pin it: **when** the item is added (`shell`, `apply_patch` and MCP calls add it
 * before their arguments are checked, so a bad call is a failed item; the delegation tools add
 * it only once their arguments are valid, so a bad call has none; a client function's item is
 * added already `completed`, since the call is then the client's to answer) and **where an error
 * goes** (a `command_execution`'s `output`, an `mcp_call`'s `error`, or, for `function_call`
 * items, a `function_call_output` item that follows). Items that are not the call's own (that
 * following `function_call_output`, a subagent's `agent_message`, an interrupt) stay with the
 * tool. A refusal is still audited by the tool calling `refused`: each tool turns it into its
 * own output for the model, so the registry never sees it thrown.
 *
 * @module
 */

import type { ApiError } from "../../../errors.ts";
import type { Identity } from "../../../policy/compile.ts";
import { type ActionPolicy, requireAction } from "../../../policy/on_behalf.ts";
import type { ServerState } from "../../../state.ts";
import { newId } from "../../ids.ts";
import type { TurnRecorder } from "../recorder.ts";
import type { TraceBuilder } from "../traces.ts";
import {
  type CallItem,
  type ToolCall,
  type ToolContext,
  type ToolEnvironment,
  toolError,
  type ToolProvider,
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
 * Run one call: the provider that handles its name runs it, under the policy the provider
 * declares for it; a name no provider handles answers `unknown_tool`. Answers what the model
 * reads as the call's output.
 */
export async function dispatchToolCall(
  tools: readonly ToolProvider[],
  call: ToolCall,
  setup: DispatchSetup,
): Promise<string> {
  const provider = tools.find((t) => t.handles(call.name));
  const span = setup.trace.span(`tool ${call.name}`, "internal");
  const needs: ActionPolicy | undefined = provider?.policy?.(call.name);
  const item = callItem(setup.recorder, provider ? setup.recorder.nextOutputIndex() : -1);
  const context: ToolContext = {
    state: setup.state,
    identity: setup.identity,
    environment: setup.environment,
    signal: setup.signal,
    recorder: setup.recorder,
    authorize: () => {
      if (needs) requireAction(setup.state.policy, setup.identity, needs);
    },
    refused: (error) => setup.audit(call.name, error),
    item,
    attributes: { "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.callId },
  };
  let output: string;
  try {
    output = provider
      ? await provider.run(call, context)
      : toolError("unknown_tool", `there is no tool named '${call.name}'`);
  } catch (e) {
    if (item.leftOpen()) item.done({ status: setup.signal.aborted ? "incomplete" : "failed" });
    span.end(context.attributes, (e as Error).message);
    throw e;
  }
  if (item.leftOpen()) item.done({ status: output.startsWith("error") ? "failed" : "completed" });
  span.end(context.attributes, output.startsWith("error") ? output : undefined);
  return output;
}

/**
 * The call's item at output index `index`: added and finished once, through the recorder;
 * `leftOpen` says whether it was added and not finished.
 */
function callItem(recorder: TurnRecorder, index: number): CallItem & { leftOpen(): boolean } {
  let added: Record<string, unknown> | null = null;
  let finished = false;
  return {
    index,
    get current() {
      return added;
    },
    leftOpen: () => added !== null && !finished,
    open(fields, status = "in_progress") {
      if (added !== null) throw new Error("a tool call's item is added once");
      const { id: _, ...rest } = fields;
      added = recorder.addItem({ id: newId("item"), ...rest, status }, index);
      return added;
    },
    done(fields = {}) {
      if (added === null || finished) throw new Error("a tool call's item is finished once");
      finished = true;
      recorder.itemDone({ ...added, ...fields }, index);
    },
  };
}
