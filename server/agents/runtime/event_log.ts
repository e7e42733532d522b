/**
 * One ordered, persisted event log per session. An event is written to the store (the
 * `events` table, whose row order is the stream order) before any subscriber sees it, so what a
 * client was sent is never lost to a crash, and a reconnect with `Last-Event-ID` reads exactly
 * what followed that event. Fan-out is synchronous: every subscriber gets the same events in
 * the same order, and a subscriber that registers between two events misses none of the later
 * ones.
 *
 * @module
 */

import { newId } from "../ids.ts";
import type { AgentStore } from "../store.ts";
import { sseFrame } from "./sse.ts";

/** The `Last-Event-ID` that asks for every event of a session, from its first. */
export const FROM_START = "0";

/** A live reader of a session's events. */
export interface Subscriber {
  /**
   * One event: its id, its type, its JSON text, and its SSE frame (made once per event and
   * shared by every subscriber).
   */
  send(eventId: string, type: string, json: string, frame: Uint8Array): void;
}

/** A stored event. */
export interface LoggedEvent {
  /** Its id. */
  id: string;
  /** Its type. */
  type: string;
  /** Its JSON text, as sent. */
  json: string;
}

/**
 * The log of every session of a store.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AgentStore } from "../store.ts";
 * import { EventLog } from "./event_log.ts";
 * const dir = Deno.makeTempDirSync();
 * const store = AgentStore.open(dir);
 * const log = new EventLog(store);
 * const seen: string[] = [];
 * log.subscribe("sess_1", { send: (_id, type) => seen.push(type) });
 * const first = log.append("sess_1", { type: "agent.session.in_progress" });
 * log.append("sess_1", { type: "agent.session.idle" });
 * assert.deepEqual(seen, ["agent.session.in_progress", "agent.session.idle"]);
 * assert.deepEqual(log.after("sess_1", first.event_id as string)?.map((e) => e.type), ["agent.session.idle"]);
 * store.close();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export class EventLog {
  readonly #store: AgentStore;
  readonly #subscribers = new Map<string, Set<Subscriber>>();
  #batch: (() => void)[] | undefined;

  /** A log over a store. */
  constructor(store: AgentStore) {
    this.#store = store;
  }

  /**
   * Store an event of a session, then send it to every subscriber. The event gets its
   * `event_id` and `session_id` here; returns it as sent.
   */
  append(sessionId: string, event: { type: string } & Record<string, unknown>) {
    const eventId = newId("event");
    // Key order: type, event_id, session_id, then the payload (whose own keys are not these).
    const { type, ...payload } = event;
    const full: Record<string, unknown> = {
      type,
      event_id: eventId,
      session_id: sessionId,
      ...payload,
    };
    const json = JSON.stringify(full);
    this.#store.prepared("INSERT INTO events (event_id, session_id, body) VALUES (?, ?, ?)")
      .run(eventId, sessionId, json);
    const deliver = () => {
      const subs = this.#subscribers.get(sessionId);
      if (!subs) return;
      const frame = sseFrame(eventId, type, json);
      for (const s of subs) s.send(eventId, type, json, frame);
    };
    if (this.#batch) this.#batch.push(deliver);
    else deliver();
    return full;
  }

  /**
   * Run `fn`'s writes (objects and events) as one transaction, and send its events once it
   * committed: one commit instead of one per write, and still nothing sent before it is stored.
   */
  batch<T>(fn: () => T): T {
    if (this.#batch) return fn();
    this.#batch = [];
    let result: T;
    try {
      result = this.#store.transaction(fn);
    } catch (e) {
      this.#batch = undefined;
      throw e;
    }
    const pending = this.#batch;
    this.#batch = undefined;
    for (const deliver of pending) deliver();
    return result;
  }

  /**
   * The events of a session stored after `eventId`, in order; undefined when that id is not an
   * event of this session. {@linkcode FROM_START} stands before the first event, so a finished
   * session's events can be read again from the beginning.
   */
  after(sessionId: string, eventId: string): LoggedEvent[] | undefined {
    const row = eventId === FROM_START
      ? { seq: Number.MIN_SAFE_INTEGER }
      : this.#store.prepared("SELECT seq FROM events WHERE event_id = ? AND session_id = ?")
        .get(eventId, sessionId) as { seq: number } | undefined;
    if (!row) return undefined;
    const rows = this.#store.prepared(
      "SELECT event_id, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
    ).all(sessionId, row.seq) as { event_id: string; body: string }[];
    return rows.map((r) => ({ id: r.event_id, type: typeOf(r.body), json: r.body }));
  }

  /** Add a subscriber; returns the function that removes it. */
  subscribe(sessionId: string, subscriber: Subscriber): () => void {
    let subs = this.#subscribers.get(sessionId);
    if (!subs) this.#subscribers.set(sessionId, subs = new Set());
    subs.add(subscriber);
    return () => {
      subs.delete(subscriber);
      if (subs.size === 0 && this.#subscribers.get(sessionId) === subs) {
        this.#subscribers.delete(sessionId);
      }
    };
  }

  /** How many subscribers a session has. */
  subscriberCount(sessionId: string): number {
    return this.#subscribers.get(sessionId)?.size ?? 0;
  }

  /** Forget a session's events (it was deleted). */
  drop(sessionId: string): void {
    this.#store.prepared("DELETE FROM events WHERE session_id = ?").run(sessionId);
  }
}

function typeOf(json: string): string {
  // Every stored event starts with its type: {"type":"…"
  const end = json.indexOf('"', 9);
  return json.slice(9, end);
}
