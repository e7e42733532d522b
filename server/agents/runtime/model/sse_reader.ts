/**
 * Reading an upstream's Server-Sent Events with `eventsource-parser`, one parsed JSON payload
 * at a time, and the POST that opens such a stream.
 *
 * @module
 */

import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { UpstreamConfig } from "../../config.ts";
import { codeOfStatus, ModelError } from "./model.ts";

/** POST `body` to `path` on the upstream, expecting a stream; a refusal is a ModelError. */
export async function openStream(
  upstream: UpstreamConfig,
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const headers = new Headers({
    "content-type": "application/json",
    accept: "text/event-stream",
  });
  if (upstream.apiKey) headers.set("authorization", `Bearer ${upstream.apiKey}`);
  let response: Response;
  try {
    response = await fetch(`${upstream.baseUrl}${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal,
    });
  } catch (e) {
    if (signal.aborted) throw e;
    const why = (e as Error).message.replaceAll(upstream.apiKey || "\0", "…");
    throw new ModelError(
      "connection_failed",
      `The upstream model provider at ${upstream.baseUrl} could not be reached: ${why}`,
    );
  }
  if (!response.ok || !response.body) {
    const text = await response.text().catch(() => "");
    let message = text.slice(0, 500);
    try {
      const m = JSON.parse(text)?.error?.message;
      if (typeof m === "string") message = m;
    } catch { /* not JSON */ }
    throw new ModelError(
      codeOfStatus(response.status),
      `The upstream model provider answered ${response.status}: ${message}`,
    );
  }
  return response.body;
}

/**
 * The `data:` payloads of a stream, parsed, in one array per read: the events that arrived
 * together stay together, so that their consumer can store them in one commit. `[DONE]` ends
 * the stream.
 */
export async function* ssePayloads(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<Record<string, unknown>[]> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (m) => queue.push(m) });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    const payloads: Record<string, unknown>[] = [];
    let end: "done" | "not json" | undefined;
    for (const m of queue.splice(0)) {
      if (m.data === "[DONE]") {
        end = "done";
        break;
      }
      try {
        payloads.push(JSON.parse(m.data));
      } catch {
        end = "not json";
        break;
      }
    }
    // What came before a bad event is still passed on, then the stream fails.
    if (payloads.length > 0) yield payloads;
    if (end === "not json") {
      throw new ModelError("server_error", "The upstream sent an event that is not JSON.");
    }
    if (end === "done") return;
  }
}
