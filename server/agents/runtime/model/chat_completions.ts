/**
 * The Chat Completions adapter, for upstreams that speak only `POST /chat/completions` (most
 * self-hosted model servers): the conversation becomes messages (a run of function calls one
 * assistant message with `tool_calls`, each output a `tool` message), the tools become
 * `{type: "function", function: {...}}`, and the streamed chunks (`delta.content`,
 * `delta.tool_calls` by index) come back as the same {@linkcode ModelEvent}s the Responses
 * adapter gives.
 *
 * @module
 */

import type { UpstreamConfig } from "../../config.ts";
import type { HistoryEntry, ModelEvent, ModelRequest } from "./model.ts";
import { usageOf } from "./responses.ts";
import { openStream, ssePayloads } from "./sse_reader.ts";

type Obj = Record<string, unknown>;

/**
 * The conversation as Chat Completions messages.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chatMessages } from "./chat_completions.ts";
 * const messages = chatMessages("Be brief.", [
 *   { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
 *   { type: "function_call", call_id: "c1", name: "shell", arguments: "{}" },
 *   { type: "function_call_output", call_id: "c1", output: "ok" },
 * ]);
 * assert.deepEqual(messages.map((m) => m.role), ["system", "user", "assistant", "tool"]);
 * ```
 */
export function chatMessages(instructions: string, input: HistoryEntry[]): Obj[] {
  const messages: Obj[] = [];
  if (instructions) messages.push({ role: "system", content: instructions });
  for (const entry of input) {
    if (entry.type === "message") {
      messages.push({ role: entry.role, content: entry.content.map((c) => c.text ?? "").join("") });
    } else if (entry.type === "function_call") {
      const last = messages.at(-1);
      const call = {
        id: entry.call_id,
        type: "function",
        function: { name: entry.name, arguments: entry.arguments },
      };
      // An assistant's text and the calls that follow it are one message in this API.
      if (last?.role === "assistant") {
        ((last.tool_calls ??= []) as Obj[]).push(call);
      } else {
        messages.push({ role: "assistant", content: null, tool_calls: [call] });
      }
    } else {
      messages.push({ role: "tool", tool_call_id: entry.call_id, content: entry.output });
    }
  }
  return messages;
}

/** One model call through Chat Completions. */
export async function* chatCompletionsModel(
  upstream: UpstreamConfig,
  request: ModelRequest,
): AsyncGenerator<ModelEvent[]> {
  const body: Obj = {
    model: request.model,
    messages: chatMessages(request.instructions, request.input),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  if (request.reasoning?.effort) body.reasoning_effort = request.reasoning.effort;
  const stream = await openStream(upstream, "/chat/completions", body, request.signal);
  const key = `msg_chat_${crypto.randomUUID().replaceAll("-", "")}`;
  let text = "";
  let started = false;
  let usage: Obj | undefined;
  const calls: { id: string; name: string; arguments: string }[] = [];
  for await (const chunks of ssePayloads(stream)) {
    const out: ModelEvent[] = [];
    for (const chunk of chunks) {
      if (chunk.usage) usage = chunk.usage as Obj;
      const choice = ((chunk.choices ?? []) as Obj[])[0];
      const delta = (choice?.delta ?? {}) as Obj;
      if (typeof delta.content === "string" && delta.content !== "") {
        if (!started) {
          started = true;
          out.push({ type: "message.start", key });
        }
        text += delta.content;
        out.push({ type: "text.delta", key, delta: delta.content });
      }
      for (const tc of (delta.tool_calls ?? []) as Obj[]) {
        const index = typeof tc.index === "number" ? tc.index : calls.length;
        const fn = (tc.function ?? {}) as Obj;
        const call = calls[index] ??= { id: "", name: "", arguments: "" };
        if (typeof tc.id === "string") call.id = tc.id;
        if (typeof fn.name === "string") call.name += fn.name;
        if (typeof fn.arguments === "string") call.arguments += fn.arguments;
      }
    }
    if (out.length > 0) yield out;
  }
  const end: ModelEvent[] = [];
  if (started) end.push({ type: "message.done", key, text });
  for (const call of calls) {
    if (!call) continue;
    end.push({
      type: "call",
      callId: call.id || `call_${crypto.randomUUID().replaceAll("-", "")}`,
      name: call.name,
      arguments: call.arguments || "{}",
    });
  }
  end.push({ type: "completed", usage: usageOf(usage) });
  yield end;
}
