/**
 * Agent tools of type `function`, run by the client: the call is registered as pending before
 * its `item.added` goes out (so a client answering at once is never told the call is unknown),
 * the session turns `requires_action` with the call in `required_actions` and the turn
 * `waiting`, until the client posts `agent.session.input.tool_result` (or the turn is
 * cancelled). Then the session is `in_progress` again and the output is a
 * `function_call_output` item.
 *
 * @module
 */

import { newId } from "../../ids.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import type { ToolCall, ToolContext, ToolProvider } from "./tool.ts";

/** The turn was cancelled while a call waited. */
export class CallCancelled extends Error {
  /** Make one. */
  constructor() {
    super("cancelled");
    this.name = "CallCancelled";
  }
}

/** The agent's function tools. */
export class ClientFunctionTools implements ToolProvider {
  readonly #tools: FunctionToolDefinition[];

  /** From the agent's tools (those of type `function`). */
  constructor(tools: Record<string, unknown>[]) {
    this.#tools = tools.filter((t) => t.type === "function").map((t) => ({
      type: "function",
      name: t.name as string,
      description: (t.description as string) ?? "",
      parameters: (t.parameters as Record<string, unknown>) ?? { type: "object" },
    }));
  }

  /** The functions. */
  definitions(): FunctionToolDefinition[] {
    return this.#tools;
  }

  /** Calls to one of them. */
  handles(name: string): boolean {
    return this.#tools.some((t) => t.name === name);
  }

  /** Wait for the client's result. */
  async run(call: ToolCall, context: ToolContext): Promise<string> {
    const rec = context.recorder;
    const live = rec.live;
    const turnId = rec.turn.id;
    const answered = Promise.withResolvers<
      { success: boolean; output: unknown; error: string | null }
    >();
    live.pending.set(call.callId, {
      turnId,
      name: call.name,
      arguments: call.arguments,
      resolve: answered.resolve,
    });
    try {
      // Completed as it is added: the call is now the client's to answer.
      context.item.open({
        type: "function_call",
        call_id: call.callId,
        name: call.name,
        arguments: call.arguments,
      }, "completed");
      context.item.done();
      rec.turnChange({ status: "waiting" });
      rec.session.sessionStatus(
        "requires_action",
        [...live.pending.entries()].map(([id, p]) => ({
          type: "function_call",
          call_id: id,
          name: p.name,
          arguments: p.arguments,
          turn_id: p.turnId,
        })),
      );
      const cancelled = new Promise<never>((_, reject) => {
        const abort = () => reject(new CallCancelled());
        if (context.signal.aborted) abort();
        context.signal.addEventListener("abort", abort, { once: true });
      });
      const result = await Promise.race([answered.promise, cancelled]);
      live.pending.delete(call.callId);
      rec.turnChange({ status: "in_progress" });
      rec.session.sessionStatus("in_progress");
      const text = typeof result.output === "string"
        ? result.output
        : result.output == null
        ? ""
        : JSON.stringify(result.output);
      rec.addItem({
        id: newId("item"),
        type: "function_call_output",
        call_id: call.callId,
        output: result.success ? (result.output ?? null) : null,
        error: result.success ? null : (result.error ?? "The tool failed."),
        status: result.success ? "completed" : "failed",
      }, null);
      return result.success ? text : `error: ${result.error ?? "The tool failed."}`;
    } finally {
      live.pending.delete(call.callId);
    }
  }
}
