/**
 * Agent tools of type `function`, run by the client: the call is registered as pending before
 * its `item.added` goes out (so a client answering at once is never told the call is unknown),
 * the session turns `requires_action` with the call in `required_actions` and the turn
 * `waiting`, until the client posts `agent.session.input.tool_result` (or the turn is
 * cancelled). Then the session is `in_progress` again and the output is a
 * `function_call_output` item. The tool declares both items (the call's at `completed`); the
 * registry (`registry.ts`) adds them; the execution does the session's status changes.
 *
 * @module
 */

import type { FunctionToolDefinition } from "../model/model.ts";
import { functionCallFields, type Tool, type ToolProvider } from "./tool.ts";

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

  /** A call to one of them. */
  tool(name: string): Tool<ClientAnswer> | undefined {
    return this.#tools.some((t) => t.name === name) ? CLIENT_FUNCTION : undefined;
  }
}

/** What the client answers a call with. */
interface ClientAnswer {
  callId: string;
  answered: Promise<{ success: boolean; output: unknown; error: string | null }>;
}

/** A call the client answers: its item is complete as it is added. */
const CLIENT_FUNCTION: Tool<ClientAnswer> = {
  // Pending before the item goes out, so a client answering at once finds the call.
  prepare: (call, context) => {
    const live = context.recorder.live;
    const answered = Promise.withResolvers<
      { success: boolean; output: unknown; error: string | null }
    >();
    live.pending.set(call.callId, {
      turnId: context.recorder.turn.id,
      name: call.name,
      arguments: call.arguments,
      resolve: answered.resolve,
    });
    return { callId: call.callId, answered: answered.promise };
  },
  item: {
    at: "completed",
    fields: functionCallFields,
    answerIn: "function_call_output",
  },
  run: async ({ callId, answered }, context) => {
    const rec = context.recorder;
    const live = rec.live;
    try {
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
      const result = await Promise.race([answered, cancelled]);
      live.pending.delete(callId);
      rec.turnChange({ status: "in_progress" });
      rec.session.sessionStatus("in_progress");
      if (!result.success) {
        const error = result.error ?? "The tool failed.";
        return { output: `error: ${error}`, status: "failed", record: { error } };
      }
      const text = typeof result.output === "string"
        ? result.output
        : result.output == null
        ? ""
        : JSON.stringify(result.output);
      return { output: text, record: { output: result.output ?? null } };
    } finally {
      live.pending.delete(callId);
    }
  },
};
