/**
 * A tool call's result as the text the model reads (and an `mcp_call` item records): text
 * parts as they are, joined by newlines; embedded text resources by their text; images, audio,
 * binary resources and resource links as a bracketed line saying what they are (the model gets
 * no binary data through a function-call output); `structuredContent` as JSON when there is no
 * content at all. The whole is cut at {@linkcode MAX_OUTPUT_CHARS}, saying how much was left
 * out.
 *
 * @module
 */

import type { McpCallResult } from "./types.ts";

/** Longest output handed to the model. */
export const MAX_OUTPUT_CHARS = 256 * 1024;

type Part = Record<string, unknown> & { type: string };

function base64Bytes(data: unknown): number {
  return typeof data === "string" ? Math.floor((data.replace(/=+$/, "").length * 3) / 4) : 0;
}

function partText(part: Part): string {
  switch (part.type) {
    case "text":
      return String(part.text ?? "");
    case "image":
    case "audio":
      return `[${part.type}: ${part.mimeType ?? "unknown type"}, ${base64Bytes(part.data)} bytes]`;
    case "resource": {
      const r = (part.resource ?? {}) as Record<string, unknown>;
      if (typeof r.text === "string") return r.text;
      return `[resource ${r.uri ?? ""}: ${r.mimeType ?? "binary"}, ${base64Bytes(r.blob)} bytes]`;
    }
    case "resource_link":
      return `[resource link ${part.uri ?? ""}${part.name ? ` (${part.name})` : ""}]`;
    default:
      return `[${part.type} content]`;
  }
}

/** Cut `text` to {@linkcode MAX_OUTPUT_CHARS}. */
export function capOutput(text: string): string {
  if (text.length <= MAX_OUTPUT_CHARS) return text;
  const dropped = text.length - MAX_OUTPUT_CHARS;
  return `${text.slice(0, MAX_OUTPUT_CHARS)}\n[… ${dropped} more characters left out]`;
}

/**
 * The model's view of a `tools/call` result.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultOutput } from "./results.ts";
 * assert.deepEqual(
 *   resultOutput({ content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }),
 *   { output: "a\nb", isError: false },
 * );
 * assert.deepEqual(
 *   resultOutput({ content: [{ type: "text", text: "no such file" }], isError: true }),
 *   { output: "no such file", isError: true },
 * );
 * assert.deepEqual(resultOutput({ content: [], structuredContent: { n: 3 } }), {
 *   output: '{"n":3}',
 *   isError: false,
 * });
 * ```
 */
export function resultOutput(result: Record<string, unknown>): McpCallResult {
  const content = Array.isArray(result.content) ? result.content as Part[] : [];
  let output = content.map(partText).join("\n");
  if (content.length === 0) {
    if (result.structuredContent !== undefined) output = JSON.stringify(result.structuredContent);
    else if (result.toolResult !== undefined) output = JSON.stringify(result.toolResult);
  }
  return { output: capOutput(output), isError: result.isError === true };
}
