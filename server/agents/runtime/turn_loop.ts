/**
 * The loop of one turn. Each step calls the model (the agent's instructions, the whole
 * conversation, the tools) and streams what it writes to the session's subscribers as it
 * arrives; then it runs the tool calls the model made, in order, and loops, until the model
 * answers without a tool call and no steering message waits. A message posted during the turn
 * joins the conversation before the next model call. Cancel aborts the model call, kills the
 * processes of running commands, and ends waits for the client.
 *
 * Event order of a turn: `turn.created` (when the message is accepted), `session.in_progress`,
 * `turn.in_progress`, the user message's `item.added`, then per model call its items
 * (`item.added`, content and text events, `item.done`), per tool call its items, and at the end
 * the turn's terminal event (`completed`, `failed` or `cancelled`, with usage) followed by
 * `session.idle`.
 *
 * @module
 */

import type { ApiError } from "../../errors.ts";
import { newId } from "../ids.ts";
import { CallCancelled } from "./tools/client_functions.ts";
import type { ToolCall, ToolEnvironment, ToolProvider } from "./tools/tool.ts";
import { dispatchToolCall } from "./tools/registry.ts";
import type { InputMessage } from "./live_session.ts";
import {
  type FunctionToolDefinition,
  type ModelAdapter,
  ModelError,
  type ModelEvent,
  type ModelRequest,
} from "./model/model.ts";
import type { TurnRecorder } from "./recorder.ts";
import type { SessionBody } from "./records.ts";
import type { TraceBuilder } from "./traces.ts";
import type { UpstreamConfig } from "../config.ts";
import type { Identity } from "../../policy/compile.ts";
import type { ServerState } from "../../state.ts";

type Obj = Record<string, unknown>;

/** What a turn runs with. */
export interface TurnSetup {
  /** The server. */
  state: ServerState;
  /** The turn's recorder. */
  recorder: TurnRecorder;
  /** The trace being built. */
  trace: TraceBuilder;
  /** The model adapter and the upstream it calls. */
  model: { adapter: ModelAdapter; upstream: UpstreamConfig };
  /** Tool providers, in the order they are offered. */
  tools: ToolProvider[];
  /** The environment, if any. */
  environment: ToolEnvironment | null;
  /** The owner. */
  identity: Identity | undefined;
  /** Aborted by cancel. */
  signal: AbortSignal;
  /** Messages that steer the turn. */
  steering: InputMessage[];
  /** Audits a refused tool call. */
  audit(tool: string, error: ApiError): void;
  /** Added to the instructions (for example, MCP servers that could not be used). */
  notices?: string[];
  /** The model and reasoning effort to use instead of the session's (a subagent's own). */
  overrides?: { model: string | null; reasoningEffort: string | null };
  /**
   * Records input messages (taking them out of the array) instead of as user messages: a
   * subagent's input is an `agent_message` from the agent that sent it.
   */
  takeInput?(messages: InputMessage[]): void;
}

/** How a turn ended. */
export type TurnEnd =
  | { status: "completed" }
  | { status: "cancelled" }
  | { status: "failed"; code: string; message: string };

/** Add user messages to the turn: items, and the conversation. */
export function takeMessages(rec: TurnRecorder, messages: InputMessage[]): void {
  if (messages.length === 0) return;
  rec.session.log.batch(() => takeAll(rec, messages));
}

function takeAll(rec: TurnRecorder, messages: InputMessage[]): void {
  for (const m of messages.splice(0)) {
    const content = m.content.map((c) => ({ ...c }));
    rec.addItem({
      id: newId("message"),
      type: "message",
      role: "user",
      content,
      phase: null,
      status: "completed",
    }, null);
    rec.remember({ type: "message", role: "user", content });
  }
}

function instructionsOf(setup: TurnSetup, session: SessionBody): string {
  const parts = [baseInstructions(session, setup.environment), ...(setup.notices ?? [])];
  return parts.filter((p) => p !== "").join("\n\n");
}

function baseInstructions(session: SessionBody, environment: ToolEnvironment | null): string {
  const own = session.agent.instructions ?? "";
  if (!environment) return own;
  // The workspace is a directory of this machine: commands see it by that path only (there is
  // no /workspace in their file system), so the model is told the real one and nothing else.
  const context = `You are working in the directory ${environment.workspace} (the workspace); ` +
    `in commands use paths relative to it or under ${environment.workspace} (there is no ` +
    `/workspace directory). Files you put under ${environment.workspace}/outputs/ are ` +
    "published as artifacts when the turn ends. Run commands with the shell tool and edit " +
    "files with the apply_patch tool.";
  return own ? `${own}\n\n${context}` : context;
}

/** One model call: its events streamed out; returns the calls it made. */
async function modelStep(setup: TurnSetup, request: ModelRequest): Promise<ToolCall[]> {
  const rec = setup.recorder;
  const calls: ToolCall[] = [];
  const messages = new Map<string, { item: Obj; index: number; text: string }>();
  const reasoning = new Map<string, { item: Obj; index: number; text: string }>();
  const span = setup.trace.span(`model ${request.model}`, "client");
  let usageAttrs: Record<string, number> = {};
  const take = (e: ModelEvent) => {
    switch (e.type) {
      case "message.start": {
        const index = rec.nextOutputIndex();
        const item = rec.addItem({
          id: newId("message"),
          type: "message",
          role: "assistant",
          content: [],
          phase: null,
          status: "in_progress",
        }, index);
        messages.set(e.key, { item, index, text: "" });
        rec.emit({
          type: "agent.session.turn.content_part.added",
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { type: "output_text", text: "" },
        });
        break;
      }
      case "text.delta": {
        const m = messages.get(e.key);
        if (!m) break;
        m.text += e.delta;
        rec.emit({
          type: "agent.session.turn.output_text.delta",
          item_id: m.item.id,
          output_index: m.index,
          content_index: 0,
          delta: e.delta,
        });
        break;
      }
      case "message.done": {
        const m = messages.get(e.key);
        if (!m) break;
        m.text = e.text || m.text;
        const common = { item_id: m.item.id, output_index: m.index, content_index: 0 };
        rec.session.log.batch(() => {
          rec.emit({ type: "agent.session.turn.output_text.done", ...common, text: m.text });
          rec.emit({
            type: "agent.session.turn.content_part.done",
            ...common,
            part: { type: "output_text", text: m.text },
          });
        });
        break;
      }
      case "reasoning.start": {
        const index = rec.nextOutputIndex();
        const item = rec.addItem({
          id: newId("item"),
          type: "reasoning",
          summary: [],
          status: "in_progress",
        }, index);
        reasoning.set(e.key, { item, index, text: "" });
        rec.emit({
          type: "agent.session.turn.reasoning_summary_part.added",
          item_id: item.id,
          output_index: index,
          summary_index: 0,
          part: { type: "summary_text", text: "" },
        });
        break;
      }
      case "reasoning.delta": {
        const r = reasoning.get(e.key);
        if (!r) break;
        r.text += e.delta;
        rec.emit({
          type: "agent.session.turn.reasoning_summary_text.delta",
          item_id: r.item.id,
          output_index: r.index,
          summary_index: 0,
          delta: e.delta,
        });
        break;
      }
      case "reasoning.done": {
        const r = reasoning.get(e.key);
        if (!r) break;
        r.text = e.text || r.text;
        const common = { item_id: r.item.id, output_index: r.index, summary_index: 0 };
        rec.emit({
          type: "agent.session.turn.reasoning_summary_text.done",
          ...common,
          text: r.text,
        });
        rec.emit({
          type: "agent.session.turn.reasoning_summary_part.done",
          ...common,
          part: { type: "summary_text", text: r.text },
          status: null,
        });
        rec.itemDone({
          ...r.item,
          summary: [{ type: "summary_text", text: r.text }],
          status: "completed",
        }, r.index);
        break;
      }
      case "call":
        calls.push({ callId: e.callId, name: e.name, arguments: e.arguments });
        break;
      case "completed":
        rec.addUsage(e.usage);
        if (e.usage) {
          usageAttrs = {
            "gen_ai.usage.input_tokens": e.usage.input_tokens,
            "gen_ai.usage.output_tokens": e.usage.output_tokens,
          };
        }
        break;
    }
  };
  /** The end of the call: its messages are done, and join the conversation. */
  let finished = false;
  const finish = () => {
    finished = true;
    span.end({ "gen_ai.request.model": request.model, ...usageAttrs });
    // A message followed by tool calls, or by a steering message still to be answered, is
    // commentary; otherwise it is the final answer.
    const phase = calls.length > 0 || setup.steering.length > 0 ? "commentary" : "final_answer";
    rec.session.log.batch(() => {
      for (const m of messages.values()) {
        rec.itemDone({
          ...m.item,
          content: [{ type: "output_text", text: m.text }],
          phase,
          status: "completed",
        }, m.index);
        rec.remember({
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: m.text }],
        });
      }
    });
  };
  try {
    for await (const events of setup.model.adapter(setup.model.upstream, request)) {
      // What arrived together is stored in one commit, then sent; the read that completes the
      // response also ends its messages in that commit.
      rec.session.log.batch(() => {
        for (const e of events) take(e);
        if (events.some((e) => e.type === "completed")) finish();
      });
    }
  } catch (e) {
    if (finished) throw e;
    span.end({ "gen_ai.request.model": request.model }, (e as Error).message);
    // What was written so far stays, marked incomplete.
    for (const m of messages.values()) {
      rec.itemDone({
        ...m.item,
        content: [{ type: "output_text", text: m.text }],
        phase: "commentary",
        status: "incomplete",
      }, m.index);
    }
    throw e;
  }
  if (!finished) finish();
  return calls;
}

/** Run one tool call through the registry; answers the model's output. */
async function toolStep(setup: TurnSetup, call: ToolCall): Promise<string> {
  const rec = setup.recorder;
  rec.remember({
    type: "function_call",
    call_id: call.callId,
    name: call.name,
    arguments: call.arguments,
  });
  const output = await dispatchToolCall(setup.tools, call, setup);
  rec.remember({ type: "function_call_output", call_id: call.callId, output });
  return output;
}

/** Run the turn to its end; never throws. */
export async function runTurnLoop(
  setup: TurnSetup,
  firstInput: InputMessage[],
): Promise<TurnEnd> {
  const rec = setup.recorder;
  try {
    const take = setup.takeInput ?? ((m: InputMessage[]) => takeMessages(rec, m));
    take(firstInput);
    while (true) {
      if (setup.signal.aborted) return { status: "cancelled" };
      take(setup.steering);
      const session = rec.session.session();
      const definitions: FunctionToolDefinition[] = setup.tools.flatMap((t) => t.definitions());
      const calls = await modelStep(setup, {
        model: setup.overrides?.model ?? session.agent.model,
        instructions: instructionsOf(setup, session),
        input: rec.live.history!,
        tools: definitions,
        reasoning: setup.overrides?.reasoningEffort
          ? { ...session.agent.reasoning, effort: setup.overrides.reasoningEffort }
          : session.agent.reasoning,
        signal: setup.signal,
      });
      for (const call of calls) {
        if (setup.signal.aborted) return { status: "cancelled" };
        await toolStep(setup, call);
      }
      if (calls.length === 0 && setup.steering.length === 0) return { status: "completed" };
    }
  } catch (e) {
    if (setup.signal.aborted || e instanceof CallCancelled) return { status: "cancelled" };
    if (e instanceof ModelError) return { status: "failed", code: e.code, message: e.message };
    console.error(`sandbar: an agent turn failed: ${(e as Error).stack ?? e}`);
    return {
      status: "failed",
      code: "internal_error",
      message: `The turn failed inside the server: ${(e as Error).message}`,
    };
  }
}
