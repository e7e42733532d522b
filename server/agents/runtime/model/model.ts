/**
 * What the turn loop asks of a model and what it hears back, whatever API the upstream speaks.
 * An adapter (`responses.ts`, `chat_completions.ts`) turns one call into an ordered stream of
 * {@linkcode ModelEvent}s as the upstream sends them, so deltas reach the session's subscribers
 * while the model is still writing.
 *
 * The conversation is kept in the Responses API's input form ({@linkcode HistoryEntry}); the
 * Chat Completions adapter maps it to messages and tool calls, and back.
 *
 * @module
 */

import type { UpstreamConfig } from "../../config.ts";

/** One entry of a session's conversation, in the Responses API's input form. */
export type HistoryEntry =
  | {
    type: "message";
    role: "user" | "assistant";
    content: { type: string; text?: string; image_url?: string }[];
  }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string };

/** A function tool offered to the model. */
export interface FunctionToolDefinition {
  /** Always `function`. */
  type: "function";
  /** Its name. */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** JSON Schema of its arguments. */
  parameters: Record<string, unknown>;
}

/** Token usage in the Agents API's shape. */
export interface TokenUsage {
  /** Input tokens. */
  input_tokens: number;
  /** Details of the input. */
  input_tokens_details: { cached_tokens: number };
  /** Output tokens. */
  output_tokens: number;
  /** Details of the output. */
  output_tokens_details: { reasoning_tokens: number };
  /** Both. */
  total_tokens: number;
}

/** One call to the model. */
export interface ModelRequest {
  /** The model. */
  model: string;
  /** System instructions. */
  instructions: string;
  /** The conversation so far. */
  input: HistoryEntry[];
  /** The tools. */
  tools: FunctionToolDefinition[];
  /** Reasoning settings, passed on when set. */
  reasoning?: { effort?: string | null; summary?: string | null };
  /** Ends the call (cancel). */
  signal: AbortSignal;
}

/** What the model produces, in order. */
export type ModelEvent =
  | { type: "message.start"; key: string }
  | { type: "text.delta"; key: string; delta: string }
  | { type: "message.done"; key: string; text: string }
  | { type: "reasoning.start"; key: string }
  | { type: "reasoning.delta"; key: string; delta: string }
  | { type: "reasoning.done"; key: string; text: string }
  | { type: "call"; callId: string; name: string; arguments: string }
  | { type: "completed"; usage: TokenUsage | null };

/** A model call that failed, with the turn error code it becomes. */
export class ModelError extends Error {
  /** The turn's `error.code`. */
  readonly code: string;
  /** Make one. */
  constructor(code: string, message: string) {
    super(message);
    this.name = "ModelError";
    this.code = code;
  }
}

/**
 * An upstream adapter: the model's events, in order, in one array per read of the upstream's
 * stream (those that arrived together, which the turn then stores in one commit).
 */
export type ModelAdapter = (
  upstream: UpstreamConfig,
  request: ModelRequest,
) => AsyncGenerator<ModelEvent[]>;

/** A usage of zeros. */
export function emptyUsage(): TokenUsage {
  return {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  };
}

/**
 * `a` plus `b` (either may be null).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { addUsage, emptyUsage } from "./model.ts";
 * const one = { ...emptyUsage(), input_tokens: 3, output_tokens: 2, total_tokens: 5 };
 * assert.equal(addUsage(one, one)?.total_tokens, 10);
 * assert.equal(addUsage(null, null), null);
 * ```
 */
export function addUsage(a: TokenUsage | null, b: TokenUsage | null): TokenUsage | null {
  if (!a) return b && structuredClone(b);
  if (!b) return a;
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    input_tokens_details: {
      cached_tokens: a.input_tokens_details.cached_tokens + b.input_tokens_details.cached_tokens,
    },
    output_tokens: a.output_tokens + b.output_tokens,
    output_tokens_details: {
      reasoning_tokens: a.output_tokens_details.reasoning_tokens +
        b.output_tokens_details.reasoning_tokens,
    },
    total_tokens: a.total_tokens + b.total_tokens,
  };
}

/** The turn error code of an upstream HTTP status. */
export function codeOfStatus(status: number): string {
  if (status === 401 || status === 403) return "authentication_error";
  if (status === 404) return "resource_not_found";
  if (status === 408) return "request_timeout";
  if (status === 429) return "rate_limit_exceeded";
  if (status >= 500) return "server_error";
  return "invalid_request";
}
