/**
 * Calls to the upstream model provider (an OpenAI-compatible API: `OPENAI_BASE_URL`, or the
 * policy's `agents.upstream`). The key is added here and nowhere else; what comes back is
 * passed on. An upstream that cannot be reached is a 502 naming the base URL (never the key);
 * an upstream error keeps the upstream's status, in the same envelope.
 *
 * @module
 */

import type { UpstreamConfig } from "./config.ts";
import { type EnvelopeFields, envelopeResponse } from "./errors.ts";

/** How long the upstream has to send its response headers. */
const HEADERS_TIMEOUT_MS = 600_000;

/** What an upstream call gave: a response, or the answer to send instead. */
export type UpstreamResult =
  | { ok: true; response: Response }
  | { ok: false; answer: Response };

/** Call `path` (relative to the base URL) on the upstream. */
export async function callUpstream(
  upstream: UpstreamConfig,
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: string,
  signal?: AbortSignal,
): Promise<UpstreamResult> {
  const headers = new Headers({ accept: "application/json, text/event-stream" });
  if (body !== undefined) headers.set("content-type", "application/json");
  if (upstream.apiKey) headers.set("authorization", `Bearer ${upstream.apiKey}`);
  const timeout = AbortSignal.timeout(HEADERS_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetch(`${upstream.baseUrl}${path}`, {
      method,
      headers,
      body,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (e) {
    const why = e instanceof Error ? e.message.replaceAll(upstream.apiKey ?? "\0", "…") : "";
    return {
      ok: false,
      answer: envelopeResponse(502, {
        message: `The upstream model provider at ${upstream.baseUrl} could not be reached: ${why}`,
        type: "server_error",
        param: null,
        code: "upstream_unreachable",
      }),
    };
  }
  if (response.ok) return { ok: true, response };
  return { ok: false, answer: await passError(response) };
}

/** An upstream error answer, in the envelope, with the upstream's status. */
async function passError(response: Response): Promise<Response> {
  const text = await response.text().catch(() => "");
  let fields: EnvelopeFields | undefined;
  try {
    const parsed = JSON.parse(text);
    const e = parsed?.error;
    if (e && typeof e === "object" && typeof e.message === "string") {
      fields = {
        message: e.message,
        type: typeof e.type === "string" ? e.type : "upstream_error",
        param: typeof e.param === "string" ? e.param : null,
        code: typeof e.code === "string" ? e.code : null,
      };
    }
  } catch { /* not JSON */ }
  fields ??= {
    message: `The upstream model provider answered ${response.status}: ${text.slice(0, 500)}`,
    type: response.status >= 500 ? "server_error" : "invalid_request_error",
    param: null,
    code: "upstream_error",
  };
  return envelopeResponse(response.status, fields);
}
