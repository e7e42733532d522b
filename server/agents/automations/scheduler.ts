/**
 * The scheduler inside the server: one timer, armed for the earliest next firing of every
 * active automation (kept on each automation as `_internal.next_at`), armed again whenever an
 * automation changes, and stopped with the server. Times come from a {@linkcode SchedulerClock}
 * (the system's, or a test's fake one), so a test can move through a daylight-saving change
 * without waiting for it.
 *
 * When the timer fires, every active automation whose next firing has come fires. The rule
 * for firings that came while nothing could fire them (the server was stopped, or the machine
 * slept) is applied at start and on every firing alike, since a late timer and a restart are
 * the same case: **the latest due firing runs once; the earlier ones are recorded as `skipped`
 * with `skip_reason: "missed"`** (at most the last {@linkcode MAX_SKIPPED_RECORDS} of them; a
 * line on stderr counts any beyond). A one-time automation whose `run_at` passed while the
 * server was stopped runs at the next start, then is `completed`.
 *
 * A firing is `skipped` with `skip_reason: "pending_delivery"` when an earlier invocation of the
 * same automation is still being delivered, or when its target session still has a turn
 * running. Invocations a stopped server left `queued` are `failed` (`server_error`) at start.
 *
 * @module
 */

import type { ServerState } from "../../state.ts";
import { newId } from "../ids.ts";
import type { TargetParam } from "../schemas/automations.ts";
import type { SessionsCore } from "../domain/sessions.ts";
import type { StoredObject } from "../store.ts";
import { deliver, withResult } from "./delivery.ts";
import { type AutomationBody, type InvocationBody, publicAutomation } from "./records.ts";
import { dueFirings, MAX_SKIPPED_RECORDS, type Schedule, type SchedulerClock } from "./schedule.ts";

/** The longest a timer is set for (setTimeout's limit is about 24.8 days); then it re-arms. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** What a stop tells an invocation it interrupted. */
export const STOPPED_MESSAGE = "The server stopped before this invocation was delivered.";

/** The scheduler of a server's automations. */
export class AutomationScheduler {
  readonly #service: SessionsCore;
  readonly #clock: SchedulerClock;
  #state: ServerState | undefined;
  #timer: unknown;
  #stopping = false;
  /** Deliveries under way, by automation id. */
  readonly #delivering = new Map<string, Set<Promise<void>>>();

  /** A scheduler for a service's automations, timed by `clock`. */
  constructor(service: SessionsCore, clock: SchedulerClock) {
    this.#service = service;
    this.#clock = clock;
  }

  /** Now, in milliseconds, by the scheduler's clock. */
  nowMs(): number {
    return this.#clock.now();
  }

  /** Now, in Unix seconds, by the scheduler's clock. */
  nowSeconds(): number {
    return Math.floor(this.#clock.now() / 1000);
  }

  /**
   * Start at server start: invocations a stopped server left queued are failed, firings missed
   * meanwhile are decided by the rule above, and the timer is armed.
   */
  start(state: ServerState): void {
    this.#state = state;
    const store = this.#service.store;
    for (const row of store.byField("invocation", "status", "queued")) {
      store.update(row.id, {
        ...row.body,
        status: "failed",
        error: { code: "server_error", message: STOPPED_MESSAGE },
      });
    }
    this.#tick();
  }

  /** Arm the timer again after an automation was created, changed or deleted. */
  changed(): void {
    if (this.#state) this.#arm();
  }

  #arm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#stopping) return;
    let earliest = Infinity;
    for (const row of this.#service.store.byField("automation", "status", "active")) {
      const next = (row.body as AutomationBody)._internal.next_at;
      if (next !== null && next < earliest) earliest = next;
    }
    if (earliest === Infinity) return;
    const delay = Math.min(Math.max(earliest - this.#clock.now(), 0), MAX_DELAY_MS);
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#tick();
    }, delay);
  }

  /** Fire what is due, then arm for what comes next. */
  #tick(): void {
    if (this.#stopping) return;
    const now = this.#clock.now();
    try {
      for (const row of this.#service.store.byField("automation", "status", "active")) {
        const next = (row.body as AutomationBody)._internal.next_at;
        if (next !== null && next <= now) this.#fire(row, next, now);
      }
    } catch (e) {
      console.error(`sandbar: firing automations failed: ${(e as Error).stack ?? e}`);
    }
    this.#arm();
  }

  #fire(row: StoredObject, dueMs: number, nowMs: number): void {
    const store = this.#service.store;
    const automation = row.body as AutomationBody;
    const due = dueFirings(scheduleOf(automation), dueMs, nowMs);
    if (due.unrecorded > 0) {
      console.error(
        `sandbar: automation ${automation.id} missed ${due.unrecorded} more firings than the ` +
          `${MAX_SKIPPED_RECORDS} recorded as skipped`,
      );
    }
    const snapshot = publicAutomation(automation);
    const busy = (this.#delivering.get(automation.id)?.size ?? 0) > 0;
    const created = this.nowSeconds();
    const invocation = (scheduledMs: number, status: "queued" | "skipped", skip: string | null) =>
      ({
        id: newId("invocation"),
        object: "agent.automation.invocation",
        automation_id: automation.id,
        created_at: created,
        scheduled_at: Math.floor(scheduledMs / 1000),
        session_id: null,
        skip_reason: skip,
        source: { type: "automation", automation: snapshot },
        status,
        error: null,
      }) as InvocationBody;
    const run = invocation(due.run, busy ? "skipped" : "queued", busy ? "pending_delivery" : null);
    store.transaction(() => {
      for (const at of due.skipped) {
        const skipped = invocation(at, "skipped", "missed");
        store.insert("invocation", skipped.id, automation.id, created, skipped, null);
      }
      store.insert("invocation", run.id, automation.id, created, run, null);
      const updated: AutomationBody = {
        ...automation,
        ...(automation.type === "once" ? { status: "completed" } : {}),
        _internal: { ...automation._internal, next_at: due.next },
      };
      store.update(automation.id, updated);
    });
    if (!busy) this.#startDelivery(automation, row.sealed, run);
  }

  /**
   * A manual run (`invocations.create`): recorded `queued`, delivered at once, and answered as
   * it ended (`completed`, `failed`, or `skipped`); the schedule is unchanged.
   */
  async invokeNow(row: StoredObject): Promise<InvocationBody> {
    const store = this.#service.store;
    const automation = row.body as AutomationBody;
    const created = this.nowSeconds();
    const inv: InvocationBody = {
      id: newId("invocation"),
      object: "agent.automation.invocation",
      automation_id: automation.id,
      created_at: created,
      scheduled_at: null,
      session_id: null,
      skip_reason: null,
      source: { type: "manual" },
      status: "queued",
      error: null,
    };
    store.insert("invocation", inv.id, automation.id, created, inv, null);
    await this.#startDelivery(automation, row.sealed, inv);
    return store.get("invocation", inv.id)!.body as InvocationBody;
  }

  #startDelivery(
    automation: AutomationBody,
    sealed: Uint8Array | null,
    inv: InvocationBody,
  ): Promise<void> {
    const service = this.#service;
    const state = this.#state!;
    const store = service.store;
    const write = (body: InvocationBody) => {
      // The automation (and its invocations) may have been deleted meanwhile.
      if (store.get("invocation", body.id)) store.update(body.id, body);
    };
    const run = (async () => {
      const target = await service.box.open(sealed!, automation.id) as TargetParam;
      let current = inv;
      const result = await deliver({
        state,
        service,
        owner: automation._internal.owner,
        target,
        stopping: () => this.#stopping,
        sessionMade: (sessionId) => write(current = { ...current, session_id: sessionId }),
      });
      // A stop leaves it queued; the next start fails it (STOPPED_MESSAGE).
      if (result) write(withResult(current, result));
    })().catch((e) => {
      if (this.#stopping) return;
      write(withResult(inv, {
        status: "failed",
        session_id: null,
        error: { code: "server_error", message: (e as Error).message },
      }));
    });
    const set = this.#delivering.get(automation.id) ?? new Set();
    set.add(run);
    this.#delivering.set(automation.id, set);
    return run.finally(() => {
      set.delete(run);
      if (set.size === 0) this.#delivering.delete(automation.id);
    });
  }

  /**
   * Stop: no more firings, and nothing more is started by deliveries under way (the timer is
   * cleared before the first await); resolves once they have returned.
   */
  close(): Promise<void> {
    this.#stopping = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const running = [...this.#delivering.values()].flatMap((s) => [...s]);
    return Promise.allSettled(running).then(() => {});
  }
}

/** The schedule of an automation's body. */
export function scheduleOf(a: AutomationBody): Schedule {
  return a.type === "once"
    ? { type: "once", run_at: a.run_at! }
    : { type: "periodic", expression: a.expression!, timezone: a.timezone! };
}
