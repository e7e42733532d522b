/**
 * The Responses API adapter: one streaming `POST /responses` per model call (`store: false`, the
 * whole conversation sent each time, so the upstream keeps no state the sandbox cannot see),
 * its events turned into {@linkcode ModelEvent}s as they arrive.
 *
 * @module
 */

import type { UpstreamConfig } from "../../config.ts";
import { ModelError, type ModelEvent, type ModelRequest, type TokenUsage } from "./model.ts";
import { openStream, ssePayloads } from "./sse_reader.ts";

type Obj = Record<string, unknown>;

/** The usage of a Responses API answer, in the Agents API's shape. */
export function usageOf(raw: unknown): TokenUsage | null {
  if (!raw || typeof raw !== "object") return null;
  const u = raw as Obj;
  const num = (v: unknown) => (typeof v === "number" ? v : 0);
  const input = num(u.input_tokens ?? u.prompt_tokens);
  const output = num(u.output_tokens ?? u.completion_tokens);
  const inDetails = (u.input_tokens_details ?? u.prompt_tokens_details ?? {}) as Obj;
  const outDetails = (u.output_tokens_details ?? u.completion_tokens_details ?? {}) as Obj;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: num(inDetails.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: num(outDetails.reasoning_tokens) },
    total_tokens: num(u.total_tokens) || input + output,
  };
}

function textOf(item: Obj): string {
  const parts = (item.content ?? item.summary ?? []) as Obj[];
  return parts.map((p) => (typeof p.text === "string" ? p.text : "")).join("");
}

/** One model call through the Responses API. */
export async function* responsesModel(
  upstream: UpstreamConfig,
  request: ModelRequest,
): AsyncGenerator<ModelEvent[]> {
  const body: Obj = {
    model: request.model,
    instructions: request.instructions,
    input: request.input,
    tools: request.tools,
    stream: true,
    store: false,
  };
  if (request.reasoning?.effort || request.reasoning?.summary) {
    body.reasoning = Object.fromEntries(
      Object.entries(request.reasoning).filter(([, v]) => v != null),
    );
  }
  const stream = await openStream(upstream, "/responses", body, request.signal);
  const started = new Set<string>();
  const done = new Set<string>();
  let out: ModelEvent[] = [];
  const start = (key: string, kind: "message" | "reasoning") => {
    if (started.has(key)) return;
    started.add(key);
    out.push({ type: kind === "message" ? "message.start" : "reasoning.start", key });
  };
  const itemDone = (item: Obj) => {
    const key = (item.id ?? item.call_id) as string;
    if (done.has(key)) return;
    done.add(key);
    if (item.type === "message") {
      start(key, "message");
      out.push({ type: "message.done", key, text: textOf(item) });
    } else if (item.type === "reasoning") {
      start(key, "reasoning");
      out.push({ type: "reasoning.done", key, text: textOf(item) });
    } else if (item.type === "function_call") {
      out.push({
        type: "call",
        callId: item.call_id as string,
        name: item.name as string,
        arguments: typeof item.arguments === "string"
          ? item.arguments
          : JSON.stringify(item.arguments),
      });
    }
  };
  /** One upstream event into `out`; true once the response completed. */
  const take = (e: Obj): boolean => {
    switch (e.type) {
      case "response.output_item.added": {
        const item = e.item as Obj;
        if (item.type === "message") start(item.id as string, "message");
        if (item.type === "reasoning") start(item.id as string, "reasoning");
        return false;
      }
      case "response.output_text.delta":
        start(e.item_id as string, "message");
        out.push({ type: "text.delta", key: e.item_id as string, delta: e.delta as string });
        return false;
      case "response.reasoning_summary_text.delta":
        start(e.item_id as string, "reasoning");
        out.push({ type: "reasoning.delta", key: e.item_id as string, delta: e.delta as string });
        return false;
      case "response.output_item.done":
        itemDone(e.item as Obj);
        return false;
      case "response.completed": {
        const response = e.response as Obj;
        // Items the stream never closed (a terse upstream) are taken from the final response.
        for (const item of (response.output ?? []) as Obj[]) itemDone(item);
        out.push({ type: "completed", usage: usageOf(response.usage) });
        return true;
      }
      case "response.incomplete":
        throw new ModelError(
          "max_output_tokens",
          `The model stopped early: ${
            ((e.response as Obj)?.incomplete_details as Obj)?.reason ?? "incomplete"
          }`,
        );
      case "response.failed": {
        const error = ((e.response as Obj)?.error ?? {}) as Obj;
        throw new ModelError(
          "server_error",
          `The model failed: ${error.message ?? "no reason given"}`,
        );
      }
      case "error":
        throw new ModelError("server_error", `The model failed: ${e.message ?? "error"}`);
    }
    return false;
  };
  for await (const payloads of ssePayloads(stream)) {
    let completed = false;
    let failure: unknown;
    try {
      for (const e of payloads) if ((completed = take(e))) break;
    } catch (e) {
      failure = e;
    }
    // What the upstream sent before it failed is still passed on.
    const events = out;
    out = [];
    if (events.length > 0) yield events;
    if (failure !== undefined) throw failure;
    if (completed) return;
  }
  throw new ModelError(
    "server_error",
    "The upstream's stream ended before the response completed.",
  );
}
