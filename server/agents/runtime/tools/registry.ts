/**
 * The one place a turn's tool call is dispatched: it finds the provider of the called name,
 * builds the call's context, opens the call's trace span, and gives the tool the two policy
 * steps it must not do on its own: `authorize()` checks what the provider declares the call
 * needs (a scope, the endpoint it runs as; `server/policy/on_behalf.ts`), and `refused(error)`
 * audits a refusal under the tool's name. Each tool file is then its definition and its
 * execution (its arguments, its guards, its items), with no check or audit of its own.
 *
 * @module
 */

import type { ApiError } from "../../../errors.ts";
import type { Identity } from "../../../policy/compile.ts";
import { type ActionPolicy, requireAction } from "../../../policy/on_behalf.ts";
import type { ServerState } from "../../../state.ts";
import type { TurnRecorder } from "../recorder.ts";
import type { TraceBuilder } from "../traces.ts";
import {
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
    attributes: { "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.callId },
  };
  let output: string;
  try {
    output = provider
      ? await provider.run(call, context)
      : toolError("unknown_tool", `there is no tool named '${call.name}'`);
  } catch (e) {
    span.end(context.attributes, (e as Error).message);
    throw e;
  }
  span.end(context.attributes, output.startsWith("error") ? output : undefined);
  return output;
}
