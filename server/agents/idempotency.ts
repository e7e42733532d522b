/**
 * `Idempotency-Key` on every create: the same key with the same body within 24 hours answers
 * what the first request answered (status and body), without creating anything; the same key
 * with another body is a 409 with `x-should-retry: false`. Keys are per identity and endpoint,
 * and kept in the store, so a retry after a server restart is still recognised. Only successful
 * answers are kept: a refused request may be corrected and sent again with the same key.
 *
 * @module
 */

import type { Context } from "hono";
import type { ServerEnv } from "../state.ts";
import { conflict, invalid } from "./errors.ts";
import { unixNow } from "./ids.ts";
import type { AgentStore } from "./store.ts";

/** How long a key is remembered, in seconds. */
export const IDEMPOTENCY_WINDOW_SECONDS = 24 * 60 * 60;

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** What a create answers: a status and its JSON body, as a value or as its text already made. */
export type Created = { status: number; body: unknown } | { status: number; text: string };

/** The JSON text of what a create answers. */
function createdText(result: Created): string {
  return "text" in result ? result.text : JSON.stringify(result.body);
}

/**
 * Run `create` once per idempotency key. `fingerprint` stands for the request body (its text,
 * or a digest of a streamed upload). `create` returns the status and JSON body to answer and
 * keep, or a `Response` (a failure passed on) that is answered and not kept. Without the
 * header nothing is looked up, hashed or kept.
 */
export async function idempotentCreate(
  c: Context<ServerEnv>,
  store: AgentStore,
  fingerprint: string,
  create: () => Promise<Created | Response>,
): Promise<Response> {
  const key = c.req.header("idempotency-key");
  if (key === undefined) {
    const result = await create();
    if (result instanceof Response) return result;
    return new Response(createdText(result), { status: result.status, headers: JSON_HEADERS });
  }
  if (key.length === 0 || key.length > 255) {
    throw invalid("Idempotency-Key", "The Idempotency-Key header must be 1 to 255 characters.");
  }
  const identity = c.get("identity")?.id ?? "";
  const endpoint = c.get("endpoint").spec.id;
  const hash = await sha256Hex(fingerprint);
  // A retry that arrives while the first request still runs waits for it, then is answered
  // from what it kept: two requests with one key never both create.
  const slot = JSON.stringify([identity, endpoint, key]);
  while (inFlight.has(slot)) await inFlight.get(slot);
  const done = Promise.withResolvers<void>();
  inFlight.set(slot, done.promise);
  try {
    return await answerOnce(store, identity, endpoint, key, hash, create);
  } finally {
    inFlight.delete(slot);
    done.resolve();
  }
}

/** Requests with an idempotency key that are running, by identity, endpoint and key. */
const inFlight = new Map<string, Promise<void>>();

async function answerOnce(
  store: AgentStore,
  identity: string,
  endpoint: string,
  key: string,
  hash: string,
  create: () => Promise<Created | Response>,
): Promise<Response> {
  const now = unixNow();
  const seen = store.idempotent(identity, endpoint, key, now - IDEMPOTENCY_WINDOW_SECONDS);
  if (seen) {
    if (seen.bodyHash !== hash) {
      throw conflict(
        "This Idempotency-Key was already used with a different request body; use a new key.",
        "Idempotency-Key",
      );
    }
    return new Response(seen.response, {
      status: seen.status,
      headers: { "content-type": "application/json", "idempotent-replayed": "true" },
    });
  }
  const result = await create();
  if (result instanceof Response) return result;
  const text = createdText(result);
  store.keepIdempotent(
    identity,
    endpoint,
    key,
    hash,
    result.status,
    text,
    now,
    now - IDEMPOTENCY_WINDOW_SECONDS,
  );
  return new Response(text, { status: result.status, headers: JSON_HEADERS });
}

const JSON_HEADERS = { "content-type": "application/json" };

/** A JSON answer whose text is already made. */
export function jsonText(text: string): Response {
  return new Response(text, { status: 200, headers: JSON_HEADERS });
}

/** A JSON answer. */
export function json(result: { status: number; body: unknown }): Response {
  return new Response(JSON.stringify(result.body), {
    status: result.status,
    headers: JSON_HEADERS,
  });
}
