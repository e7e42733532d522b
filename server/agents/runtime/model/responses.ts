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
): AsyncGenerator<ModelEvent> {
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
  const start = function* (key: string, kind: "message" | "reasoning"): Generator<ModelEvent> {
    if (started.has(key)) return;
    started.add(key);
    yield { type: kind === "message" ? "message.start" : "reasoning.start", key };
  };
  for await (const e of ssePayloads(stream)) {
    switch (e.type) {
      case "response.output_item.added": {
        const item = e.item as Obj;
        if (item.type === "message") yield* start(item.id as string, "message");
        if (item.type === "reasoning") yield* start(item.id as string, "reasoning");
        break;
      }
      case "response.output_text.delta":
        yield* start(e.item_id as string, "message");
        yield { type: "text.delta", key: e.item_id as string, delta: e.delta as string };
        break;
      case "response.reasoning_summary_text.delta":
        yield* start(e.item_id as string, "reasoning");
        yield { type: "reasoning.delta", key: e.item_id as string, delta: e.delta as string };
        break;
      case "response.output_item.done":
        yield* itemDone(e.item as Obj);
        break;
      case "response.completed": {
        const response = e.response as Obj;
        // Items the stream never closed (a terse upstream) are taken from the final response.
        for (const item of (response.output ?? []) as Obj[]) yield* itemDone(item);
        yield { type: "completed", usage: usageOf(response.usage) };
        return;
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
  }
  throw new ModelError(
    "server_error",
    "The upstream's stream ended before the response completed.",
  );

  function* itemDone(item: Obj): Generator<ModelEvent> {
    const key = (item.id ?? item.call_id) as string;
    if (done.has(key)) return;
    done.add(key);
    if (item.type === "message") {
      yield* start(key, "message");
      yield { type: "message.done", key, text: textOf(item) };
    } else if (item.type === "reasoning") {
      yield* start(key, "reasoning");
      yield { type: "reasoning.done", key, text: textOf(item) };
    } else if (item.type === "function_call") {
      yield {
        type: "call",
        callId: item.call_id as string,
        name: item.name as string,
        arguments: typeof item.arguments === "string"
          ? item.arguments
          : JSON.stringify(item.arguments),
      };
    }
  }
}
