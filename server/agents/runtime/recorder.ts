/**
 * Everything a turn records, in the order the rule "stored before sent" wants: each item, turn
 * and session change is written to the store, then its event is appended to the session's log
 * (which stores it, then sends it). Output indexes count the turn's output items from 0.
 *
 * @module
 */

import { newId, unixNow } from "../ids.ts";
import type { AgentStore } from "../store.ts";
import type { EventLog } from "./event_log.ts";
import type { HistoryEntry, TokenUsage } from "./model/model.ts";
import { addUsage } from "./model/model.ts";
import type { LiveSession } from "./live_session.ts";
import { publicBody, type SessionBody, TERMINAL_EVENT, type TurnBody } from "./records.ts";

type Obj = Record<string, unknown>;

/** The session event of each status. */
const SESSION_EVENT: Record<string, string> = {
  idle: "agent.session.idle",
  in_progress: "agent.session.in_progress",
  requires_action: "agent.session.requires_action",
  failed: "agent.session.failed",
};

/** Records one session's changes. */
export class SessionRecorder {
  /** The store. */
  readonly store: AgentStore;
  /** The event log. */
  readonly log: EventLog;
  /** The session's id. */
  readonly sessionId: string;

  /** A recorder for a session. */
  constructor(store: AgentStore, log: EventLog, sessionId: string) {
    this.store = store;
    this.log = log;
    this.sessionId = sessionId;
  }

  /** The session as stored. */
  session(): SessionBody {
    return this.store.get("session", this.sessionId)!.body as SessionBody;
  }

  /** Change the session and store it; returns the new body. */
  updateSession(change: (s: SessionBody) => void): SessionBody {
    const s = this.session();
    change(s);
    this.store.update(this.sessionId, s);
    return s;
  }

  /** Set the session's status (and actions), store it, and send its event. */
  sessionStatus(status: string, requiredActions: Obj[] = []): void {
    this.log.batch(() => {
      const s = this.updateSession((s) => {
        s.status = status;
        s.required_actions = requiredActions;
        s.last_active_at = unixNow();
      });
      this.emit({ type: SESSION_EVENT[status], session: publicBody(s) }, null);
    });
  }

  /** Append an event of a turn (or of none). */
  emit(event: { type: string } & Obj, turnId: string | null): void {
    this.log.append(this.sessionId, { ...event, turn_id: turnId });
  }
}

/**
 * Records one turn: of the root agent (its items and conversation are rows under the session)
 * or of a subagent (rows under the subagent: `live` is then the subagent's).
 */
export class TurnRecorder {
  /** The session's recorder. */
  readonly session: SessionRecorder;
  /** The turn as stored. */
  turn: TurnBody;
  /** The live session. */
  readonly live: LiveSession;
  #outputIndex = 0;

  /** A recorder for a turn already stored. */
  constructor(session: SessionRecorder, live: LiveSession, turn: TurnBody) {
    this.session = session;
    this.live = live;
    this.turn = turn;
  }

  /** The next output index. */
  nextOutputIndex(): number {
    return this.#outputIndex++;
  }

  /** Append an event of this turn. */
  emit(event: { type: string } & Obj): void {
    this.session.emit(event, this.turn.id);
  }

  /** Change the turn, store it, and send `eventType` with it (when given). */
  turnChange(change: Partial<TurnBody>, eventType?: string): void {
    this.turn = { ...this.turn, ...change };
    this.session.log.batch(() => {
      this.session.store.update(this.turn.id, this.turn);
      if (eventType) {
        const usage = eventType in TERMINAL_EVENT_TYPES ? { usage: this.turn.usage } : {};
        this.emit({ type: eventType, turn: this.turn, ...usage });
      }
    });
  }

  /** Add usage to the turn and the session. */
  addUsage(usage: TokenUsage | null): void {
    if (!usage) return;
    this.turn = { ...this.turn, usage: addUsage(this.turn.usage, usage) };
    this.session.log.batch(() => {
      this.session.store.update(this.turn.id, this.turn);
      this.session.updateSession((s) => {
        s.usage = addUsage(s.usage, usage);
      });
    });
  }

  /** Store a new item and send `item.added`. */
  addItem(item: Obj, outputIndex: number | null): Obj {
    const full: Obj = { ...item, turn_id: this.turn.id };
    this.session.log.batch(() => {
      this.session.store.insert(
        "item",
        full.id as string,
        this.live.id,
        unixNow(),
        full,
        null,
      );
      this.emit({ type: "agent.session.turn.item.added", item: full, output_index: outputIndex });
    });
    return full;
  }

  /** Store an item's new state (no event). */
  updateItem(item: Obj): void {
    this.session.store.update(item.id as string, item);
  }

  /** Store an item's final state and send `item.done`. */
  itemDone(item: Obj, outputIndex: number): void {
    this.session.log.batch(() => {
      this.updateItem(item);
      this.emit({ type: "agent.session.turn.item.done", item, output_index: outputIndex });
    });
  }

  /** Append to the conversation the model sees (stored, then kept in memory). */
  remember(entry: HistoryEntry): void {
    this.session.store.insert(
      "history",
      newId("item"),
      this.live.id,
      unixNow(),
      entry as unknown as Obj,
      null,
    );
    this.live.history?.push(entry);
  }
}

const TERMINAL_EVENT_TYPES: Record<string, true> = Object.fromEntries(
  Object.values(TERMINAL_EVENT).map((t) => [t, true]),
);
