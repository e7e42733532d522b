/**
 * `Idempotency-Key` on every create: the same key with the same body within 24 hours answers
 * what the first request answered (status and body), without creating anything; the same key
 * with another body is a 409 with `x-should-retry: false`. Keys are per identity and endpoint,
 * and kept in the store, so a retry after a server restart is still recognised. Only successful
 * answers are kept: a refused request may be corrected and sent again with the same key.
 *
 * A create that stores its object through the {@linkcode Commit} it is given has the kept
 * answer written in the same transaction as the object (and answers once that has committed):
 * after a crash at any moment either both are stored or neither is, so a retry never makes a
 * second object. A create that stores its objects on its own (over several steps, or in the
 * background) has its answer kept after it returns, in a commit of its own.
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

/** Where a kept answer is filed: who asked, at which endpoint, with which key and body. */
export interface IdempotencySlot {
  /** The identity's id. */
  identity: string;
  /** The endpoint's id. */
  endpoint: string;
  /** The `Idempotency-Key`. */
  key: string;
  /** The SHA-256 (hex) of the request's fingerprint. */
  bodyHash: string;
  /** When the request arrived, in Unix seconds. */
  now: number;
}

/**
 * Store an answered create: `write` (the object's store writes, nothing else; it may run more
 * than once) and, with a slot, the answer kept for it, in one transaction of the next group
 * commit. Resolves once that has committed; when `write` throws nothing of either is stored.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commitCreate } from "./idempotency.ts";
 * import { AgentStore } from "./store.ts";
 * const dir = Deno.makeTempDirSync();
 * const store = AgentStore.open(dir);
 * const slot = { identity: "", endpoint: "agents_create", key: "k", bodyHash: "h", now: 1 };
 * const answer = { status: 200, text: '{"id":"agent_1"}' };
 * await commitCreate(store, slot, answer, () => {
 *   store.insert("agent", "agent_1", "", 1, answer.text, null, "default");
 * });
 * assert.equal(store.get("agent", "agent_1")?.id, "agent_1");
 * assert.equal(store.idempotent("", "agents_create", "k", 0)?.response, answer.text);
 * store.close();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function commitCreate(
  store: AgentStore,
  slot: IdempotencySlot | undefined,
  answer: { status: number; text: string },
  write: () => void,
): Promise<void> {
  if (slot === undefined) return store.writeSoon(write);
  return store.writeSoon(() => {
    write();
    keep(store, slot, answer);
  });
}

function keep(
  store: AgentStore,
  slot: IdempotencySlot,
  answer: { status: number; text: string },
): void {
  store.keepIdempotent(
    slot.identity,
    slot.endpoint,
    slot.key,
    slot.bodyHash,
    answer.status,
    answer.text,
    slot.now,
    slot.now - IDEMPOTENCY_WINDOW_SECONDS,
  );
}

/**
 * Given to a create, to store its object together with its answer (kept for retries when the
 * request has a key): through the group commit when its writes are plain store writes, or at
 * once in one transaction when they also start work. The create then returns that same answer.
 */
export interface Commit {
  /**
   * Commit `write` (the object's store writes, nothing else: it may run more than once) with
   * `answer` in the next group commit; resolves once committed.
   */
  soon(answer: Created, write: () => void): Promise<void>;
  /**
   * Run `make` (its writes, and the work they start, run exactly once) and keep the answer it
   * returns, in one transaction committed before this returns. Run it inside the event log's
   * `batch` so that the events it writes are sent only once committed.
   */
  now<T extends Created>(make: () => T): T;
}

/**
 * Run `create` once per idempotency key. `fingerprint` stands for the request body (its text,
 * or a digest of a streamed upload). `create` returns the status and JSON body to answer and
 * keep, or a `Response` (a failure passed on) that is answered and not kept; it stores its
 * object through the {@linkcode Commit} it is given where it can (then the kept answer is part
 * of the same transaction). Without the header nothing is looked up, hashed or kept.
 */
export async function idempotentCreate(
  c: Context<ServerEnv>,
  store: AgentStore,
  fingerprint: string,
  create: (commit: Commit) => Promise<Created | Response>,
): Promise<Response> {
  const key = c.req.header("idempotency-key");
  if (key === undefined) {
    const result = await create({
      soon: (_answer, write) => store.writeSoon(write),
      now: (make) => store.transaction(make),
    });
    if (result instanceof Response) return result;
    return new Response(createdText(result), { status: result.status, headers: JSON_HEADERS });
  }
  if (key.length === 0 || key.length > 255) {
    throw invalid("Idempotency-Key", "The Idempotency-Key header must be 1 to 255 characters.");
  }
  const identity = c.get("identity")?.id ?? "";
  const endpoint = c.get("endpoint").spec.id;
  const bodyHash = await sha256Hex(fingerprint);
  // A retry that arrives while the first request still runs waits for it, then is answered
  // from what it kept: two requests with one key never both create.
  const slot = JSON.stringify([identity, endpoint, key]);
  while (inFlight.has(slot)) await inFlight.get(slot);
  const done = Promise.withResolvers<void>();
  inFlight.set(slot, done.promise);
  try {
    return await answerOnce(store, { identity, endpoint, key, bodyHash, now: unixNow() }, create);
  } finally {
    inFlight.delete(slot);
    done.resolve();
  }
}

/** Requests with an idempotency key that are running, by identity, endpoint and key. */
const inFlight = new Map<string, Promise<void>>();

async function answerOnce(
  store: AgentStore,
  slot: IdempotencySlot,
  create: (commit: Commit) => Promise<Created | Response>,
): Promise<Response> {
  const { identity, endpoint, key, now } = slot;
  const seen = store.idempotent(identity, endpoint, key, now - IDEMPOTENCY_WINDOW_SECONDS);
  if (seen) {
    if (seen.bodyHash !== slot.bodyHash) {
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
  let kept: { status: number; text: string } | undefined;
  const result = await create({
    soon: async (answer, write) => {
      const made = { status: answer.status, text: createdText(answer) };
      await commitCreate(store, slot, made, write);
      kept = made;
    },
    now: (make) =>
      store.transaction(() => {
        const answer = make();
        const made = { status: answer.status, text: createdText(answer) };
        keep(store, slot, made);
        kept = made;
        return answer;
      }),
  });
  if (result instanceof Response) return result;
  if (kept === undefined) {
    // The create stored its objects itself: its answer is kept in a commit of its own.
    kept = { status: result.status, text: createdText(result) };
    keep(store, slot, kept);
  }
  // What was kept is what is answered, so a replay is the same answer byte for byte.
  return new Response(kept.text, { status: kept.status, headers: JSON_HEADERS });
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
