/**
 * The subagents of one session: their records, their status as the delegation tools report it
 * (in the shapes Codex's multi-agent tools answer), and their turns, which run concurrently, at
 * most `max_concurrent_subagents` at a time (default {@linkcode DEFAULT_MAX_CONCURRENT}); a
 * turn over that limit stays `queued` until one ends.
 *
 * A subagent's turns run only inside a root turn: the runtime attaches a runner when a root
 * turn starts and detaches it when the root turn ends, which cancels every subagent turn still
 * running (their commands killed) before the root turn's terminal event. Cancelling the root
 * turn cancels them at once. Subagents themselves stay `active` (idle) across root turns until
 * closed.
 *
 * A subagent is a row of kind `subagent` under its session; its turns, items and conversation
 * are rows under the subagent, so the session's own lists hold the root agent's only.
 *
 * @module
 */

import { newId, unixNow } from "../ids.ts";
import type { AgentStore } from "../store.ts";
import type { InputMessage } from "./live_session.ts";
import { LiveSession } from "./live_session.ts";
import { publicBody } from "./records.ts";
import type { SessionRecorder } from "./recorder.ts";

/** How many subagent turns run at once when the agent does not say. */
export const DEFAULT_MAX_CONCURRENT = 6;

/**
 * A subagent's status as the model reads it (Codex's `AgentStatus` JSON): `pending_init`,
 * `running`, `interrupted`, `shutdown` (closed), `not_found`, `{completed: <final answer>}`,
 * `{errored: <reason>}`.
 */
export type AgentStatus =
  | "pending_init"
  | "running"
  | "interrupted"
  | "shutdown"
  | "not_found"
  | { completed: string | null }
  | { errored: string };

/**
 * Whether a status is final (the subagent is not working).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isFinal } from "./subagents.ts";
 * assert.equal(isFinal("running"), false);
 * assert.equal(isFinal({ completed: "done" }), true);
 * assert.equal(isFinal("shutdown"), true);
 * ```
 */
export function isFinal(status: AgentStatus): boolean {
  return status !== "running" && status !== "pending_init";
}

/** A subagent as stored: the API's `Subagent`, and the server's own settings. */
export interface SubagentBody extends Record<string, unknown> {
  /** Its id. */
  id: string;
  /** Always `agent.session.subagent`. */
  object: "agent.session.subagent";
  /** Its session. */
  session_id: string;
  /** The agent that spawned it (the root agent's id is its session's id). */
  parent_agent_id: string;
  /** The `agent_type` it was spawned with, or null. */
  name: string | null;
  /** Its task. */
  instructions: { type: "output_text"; text: string }[];
  /** Unix seconds. */
  opened_at: number;
  /** Unix seconds, once closed. */
  closed_at: number | null;
  /** `active` or `closed`. */
  status: "active" | "closed";
  /** The model and reasoning effort asked for it, if any. */
  _config: { model: string | null; reasoning_effort: string | null };
}

/** A subagent's live state. */
export class Subagent {
  /** As stored. */
  body: SubagentBody;
  /** Its conversation (the runtime's live state, keyed by the subagent's id). */
  readonly live: LiveSession;
  /** What the tools report. */
  status: AgentStatus;
  /** Its running (or queued) turn. */
  turn: { abort: AbortController; steering: InputMessage[]; done: Promise<void> } | undefined;
  /** The final answer of its last turn, until a `wait` hands it to the parent. */
  undelivered: string | null = null;

  /** From its stored body. */
  constructor(body: SubagentBody, status: AgentStatus) {
    this.body = body;
    this.live = new LiveSession(body.id);
    this.status = status;
  }
}

/** Runs one turn of a subagent; resolves with the status it leaves. */
export type SubagentTurnRunner = (
  sub: Subagent,
  messages: InputMessage[],
  steering: InputMessage[],
  signal: AbortSignal,
  slot: (signal: AbortSignal) => Promise<() => void>,
) => Promise<AgentStatus>;

/** The subagents of a session. */
export class SubagentManager {
  readonly #store: AgentStore;
  readonly #recorder: SessionRecorder;
  readonly #subs = new Map<string, Subagent>();
  #runner: SubagentTurnRunner | undefined;
  #limit = DEFAULT_MAX_CONCURRENT;
  #running = 0;
  readonly #queue: (() => void)[] = [];
  #changed = Promise.withResolvers<void>();

  /** The subagents of the session `recorder` records, loaded from the store. */
  constructor(store: AgentStore, recorder: SessionRecorder) {
    this.#store = store;
    this.#recorder = recorder;
    const rows = store.list("subagent", recorder.sessionId, "asc", 100_000, undefined).rows;
    for (const row of rows) {
      const body = row.body as SubagentBody;
      this.#subs.set(
        body.id,
        new Subagent(body, body.status === "closed" ? "shutdown" : this.#lastStatus(body.id)),
      );
    }
  }

  #lastStatus(id: string): AgentStatus {
    const last = this.#store.list("turn", id, "desc", 1, undefined).rows[0]?.body;
    if (!last || last.status === "completed") return { completed: null };
    if (last.status === "failed") {
      return { errored: (last.error as { message?: string } | null)?.message ?? "failed" };
    }
    return "interrupted";
  }

  /** One subagent, or undefined. */
  get(id: string): Subagent | undefined {
    return this.#subs.get(id);
  }

  /**
   * Start running subagent turns for a root turn, `limit` at a time; an abort of `rootSignal`
   * (the root turn's cancel) cancels every subagent turn.
   */
  attach(runner: SubagentTurnRunner, limit: number | null, rootSignal: AbortSignal): void {
    this.#runner = runner;
    this.#limit = limit ?? DEFAULT_MAX_CONCURRENT;
    rootSignal.addEventListener("abort", () => this.#abortAll(), { once: true });
  }

  /** The root turn ends: cancel the subagent turns still running and wait until they ended. */
  async detach(): Promise<void> {
    this.#runner = undefined;
    await this.#abortAll();
  }

  #abortAll(): Promise<void> {
    const turns = [...this.#subs.values()].flatMap((s) => s.turn ? [s.turn] : []);
    for (const t of turns) t.abort.abort();
    return Promise.allSettled(turns.map((t) => t.done)).then(() => {});
  }

  #notify(): void {
    this.#changed.resolve();
    this.#changed = Promise.withResolvers();
  }

  /** Wait for a free slot (or the abort); answers the function that frees it. */
  #slot = (signal: AbortSignal): Promise<() => void> => {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#running--;
      this.#queue.shift()?.();
    };
    if (this.#running < this.#limit) {
      this.#running++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const take = () => {
        signal.removeEventListener("abort", abort);
        this.#running++;
        resolve(release);
      };
      const abort = () => {
        const i = this.#queue.indexOf(take);
        if (i !== -1) this.#queue.splice(i, 1);
        reject(new Error("cancelled while queued"));
      };
      if (signal.aborted) return abort();
      signal.addEventListener("abort", abort, { once: true });
      this.#queue.push(take);
    });
  };

  /** Spawn a subagent with a task; its first turn starts at once. */
  spawn(
    parentAgentId: string,
    task: string,
    options: { name: string | null; model: string | null; reasoningEffort: string | null },
  ): Subagent {
    const now = unixNow();
    const body: SubagentBody = {
      id: newId("subagent"),
      object: "agent.session.subagent",
      session_id: this.#recorder.sessionId,
      parent_agent_id: parentAgentId,
      name: options.name,
      instructions: [{ type: "output_text", text: task }],
      opened_at: now,
      closed_at: null,
      status: "active",
      _config: { model: options.model, reasoning_effort: options.reasoningEffort },
    };
    const sub = new Subagent(body, "pending_init");
    this.#recorder.log.batch(() => {
      this.#store.insert("subagent", body.id, this.#recorder.sessionId, now, body, null);
      this.#recorder.emit(
        { type: "agent.session.subagent.created", subagent: publicBody(body) },
        null,
      );
    });
    this.#subs.set(body.id, sub);
    this.#startTurn(sub, [{ content: [{ type: "input_text", text: task }] }]);
    return sub;
  }

  /**
   * Give a subagent input: it joins the running turn before its next model call, or starts a
   * turn; with `interrupt`, the running turn is cancelled first.
   */
  async send(sub: Subagent, text: string, interrupt: boolean): Promise<void> {
    const message = { content: [{ type: "input_text", text }] };
    if (sub.turn && interrupt) {
      sub.turn.abort.abort();
      await sub.turn?.done;
    }
    if (sub.turn) sub.turn.steering.push(message);
    else this.#startTurn(sub, [message]);
  }

  #startTurn(sub: Subagent, messages: InputMessage[]): void {
    const runner = this.#runner;
    if (!runner) throw new Error("subagents run only while a root turn runs");
    const abort = new AbortController();
    const steering: InputMessage[] = [];
    sub.status = "running";
    sub.undelivered = null;
    const done = runner(sub, messages, steering, abort.signal, this.#slot).then(
      (status) => status,
      (e): AgentStatus => ({ errored: (e as Error).message }),
    ).then((status) => {
      sub.status = status;
      sub.undelivered = typeof status === "object" && "completed" in status
        ? status.completed
        : null;
      sub.turn = undefined;
      this.#notify();
    });
    sub.turn = { abort, steering, done };
    this.#notify();
  }

  /** Close a subagent: its turn is cancelled; answers the status it had. */
  async close(sub: Subagent): Promise<AgentStatus> {
    if (sub.turn) {
      sub.turn.abort.abort();
      await sub.turn?.done;
    }
    const before = sub.status;
    if (sub.body.status === "closed") return before;
    this.#setOpen(sub, false);
    sub.status = "shutdown";
    this.#notify();
    return before;
  }

  /** Open a closed subagent again. */
  resume(sub: Subagent): void {
    if (sub.body.status === "active") return;
    this.#setOpen(sub, true);
    sub.status = this.#lastStatus(sub.body.id);
    this.#notify();
  }

  #setOpen(sub: Subagent, open: boolean): void {
    sub.body = {
      ...sub.body,
      status: open ? "active" : "closed",
      closed_at: open ? null : unixNow(),
    };
    this.#recorder.log.batch(() => {
      this.#store.update(sub.body.id, sub.body);
      this.#recorder.emit({
        type: open ? "agent.session.subagent.active" : "agent.session.subagent.closed",
        subagent: publicBody(sub.body),
      }, null);
    });
  }

  /**
   * Wait until one of `ids` (or, with `all`, every one) has a final status, or `timeoutMs`
   * passed; answers every id's status then. Rejects when `signal` aborts.
   */
  async wait(
    ids: string[],
    all: boolean,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<{ status: Record<string, AgentStatus>; timedOut: boolean }> {
    const statusOf = (id: string): AgentStatus => this.#subs.get(id)?.status ?? "not_found";
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const final = ids.filter((id) => isFinal(statusOf(id)));
      const met = all ? final.length === ids.length : final.length > 0;
      const left = deadline - Date.now();
      if (met || left <= 0) {
        return {
          status: Object.fromEntries(ids.map((id) => [id, statusOf(id)])),
          timedOut: !met,
        };
      }
      signal.throwIfAborted();
      const changed = this.#changed.promise;
      let onAbort = () => {};
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        await new Promise<void>((resolve, reject) => {
          timer = setTimeout(resolve, left);
          changed.then(resolve);
          onAbort = () => reject(signal.reason);
          signal.addEventListener("abort", onAbort, { once: true });
        });
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      }
    }
  }
}
