/**
 * When automations fire: 5-field cron expressions in an IANA time zone, read by `croner` (so
 * daylight-saving changes follow the zone's rules), one-time `run_at` instants, and the
 * firings a stopped server missed.
 *
 * Daylight saving, as `croner` decides it: a job at a fixed time of day (single minute and
 * hour, e.g. `30 2 * * *`) whose time falls in the spring gap runs at the first valid time
 * after the gap, and runs once when the autumn hour repeats; an interval job (`0 * * * *`,
 * `*\/15 * * * *`) skips the times the gap removes and runs on both occurrences of a repeated
 * time.
 *
 * @module
 */

import { Cron } from "croner";
import { nearestName } from "../../../shared/nearest_name.ts";
import { invalid } from "../errors.ts";

/** The clock automations are scheduled by: the system's, or a test's fake one. */
export interface SchedulerClock {
  /** Now, in milliseconds since the epoch. */
  now(): number;
  /** Call `fn` after `ms` milliseconds; returns a handle for {@linkcode clearTimeout}. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancel a timer. */
  clearTimeout(handle: unknown): void;
}

/** The system clock. */
export const systemClock: SchedulerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as number),
};

/**
 * Refuse a cron expression that is not 5 fields `croner` accepts (names the field and gives an
 * example of a valid one). Nicknames (`@daily`) and second or year fields are refused: the
 * API takes standard five-field expressions.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkExpression } from "./schedule.ts";
 * checkExpression("0 9 * * 1-5", "expression");
 * assert.throws(() => checkExpression("0 9 * *", "expression"), /5 space-separated fields/);
 * assert.throws(() => checkExpression("61 * * * *", "expression"), /minute: 61/);
 * ```
 */
export function checkExpression(expression: string, param: string): void {
  const fields = expression.trim().split(/\s+/);
  if (expression.trim() === "" || fields.length !== 5) {
    throw invalid(
      param,
      `Invalid '${param}': expected 5 space-separated fields (minute hour day-of-month month ` +
        `day-of-week), got ${
          expression.trim() === "" ? 0 : fields.length
        }; for example '0 9 * * 1-5'.`,
    );
  }
  try {
    new Cron(expression, { mode: "5-part", paused: true, timezone: "UTC" });
  } catch (e) {
    const why = (e as Error).message.replace(/^CronPattern:\s*/, "");
    throw invalid(param, `Invalid '${param}': ${why}; for example '0 9 * * 1-5'.`);
  }
}

/**
 * Refuse a time zone that is not an IANA name this runtime knows (offsets such as `+02:00` are
 * refused too: they have no daylight-saving rules), suggesting the nearest known name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTimezone } from "./schedule.ts";
 * checkTimezone("Europe/Berlin", "timezone");
 * assert.throws(() => checkTimezone("Europe/Berln", "timezone"), /Europe\/Berlin/);
 * ```
 */
export function checkTimezone(timezone: string, param: string): void {
  let known = !/^[+-]/.test(timezone) && timezone.trim() === timezone && timezone !== "";
  if (known) {
    try {
      new Intl.DateTimeFormat("en", { timeZone: timezone });
    } catch {
      known = false;
    }
  }
  if (known) return;
  const nearest = nearestName(timezone, Intl.supportedValuesOf("timeZone"));
  throw invalid(
    param,
    `Invalid '${param}': '${timezone.slice(0, 64)}' is not an IANA time zone; ` +
      (nearest ? `the nearest is '${nearest}'.` : "for example 'UTC' or 'Europe/Berlin'."),
  );
}

/** What decides an automation's firings. */
export type Schedule =
  | { type: "periodic"; expression: string; timezone: string }
  | { type: "once"; run_at: number };

/**
 * The first firing strictly after `afterMs`, in milliseconds, or null when there is none (a
 * one-time automation whose instant has passed, or an expression no date matches).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextFiring } from "./schedule.ts";
 * const daily = { type: "periodic", expression: "0 9 * * *", timezone: "Europe/Berlin" } as const;
 * // 09:00 in Berlin is 08:00 UTC in winter time, 07:00 UTC once summer time began (29 March).
 * const before = nextFiring(daily, Date.parse("2026-03-28T00:00:00Z"))!;
 * assert.equal(new Date(before).toISOString(), "2026-03-28T08:00:00.000Z");
 * assert.equal(new Date(nextFiring(daily, before)!).toISOString(), "2026-03-29T07:00:00.000Z");
 * ```
 */
export function nextFiring(schedule: Schedule, afterMs: number): number | null {
  if (schedule.type === "once") {
    const at = schedule.run_at * 1000;
    return at > afterMs ? at : null;
  }
  const cron = new Cron(schedule.expression, {
    mode: "5-part",
    paused: true,
    timezone: schedule.timezone,
  });
  return cron.nextRun(new Date(afterMs))?.getTime() ?? null;
}

/** How many earlier missed firings are recorded as skipped, at most, per catch-up. */
export const MAX_SKIPPED_RECORDS = 100;

/** The firings due by `nowMs`, from the one due at `dueMs`: run the last, skip the others. */
export interface DueFirings {
  /** The latest due firing (ms): the one that runs. */
  run: number;
  /** Earlier due firings (ms) recorded as skipped: the last {@linkcode MAX_SKIPPED_RECORDS}. */
  skipped: number[];
  /** Earlier due firings left unrecorded beyond that cap. */
  unrecorded: number;
  /** The next firing after `nowMs`, or null. */
  next: number | null;
}

/** The most firings walked through in one catch-up (a minutely job down for two years). */
const MAX_WALK = 1_100_000;

/**
 * The firings from `dueMs` (a firing that has come) to `nowMs`: the latest of them runs, the
 * earlier ones are skipped (only the last {@linkcode MAX_SKIPPED_RECORDS} of them recorded).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dueFirings } from "./schedule.ts";
 * const hourly = { type: "periodic", expression: "0 * * * *", timezone: "UTC" } as const;
 * const due = dueFirings(hourly, Date.parse("2026-01-01T01:00:00Z"), Date.parse("2026-01-01T03:30:00Z"));
 * assert.equal(new Date(due.run).toISOString(), "2026-01-01T03:00:00.000Z");
 * assert.deepEqual(due.skipped.map((t) => new Date(t).toISOString()), [
 *   "2026-01-01T01:00:00.000Z",
 *   "2026-01-01T02:00:00.000Z",
 * ]);
 * assert.equal(new Date(due.next!).toISOString(), "2026-01-01T04:00:00.000Z");
 * ```
 */
export function dueFirings(schedule: Schedule, dueMs: number, nowMs: number): DueFirings {
  if (schedule.type === "once") return { run: dueMs, skipped: [], unrecorded: 0, next: null };
  const cron = new Cron(schedule.expression, {
    mode: "5-part",
    paused: true,
    timezone: schedule.timezone,
  });
  const earlier: number[] = [];
  let unrecorded = 0;
  let run = dueMs;
  let at: number | null = dueMs;
  for (let walked = 0; walked < MAX_WALK; walked++) {
    at = cron.nextRun(new Date(run))?.getTime() ?? null;
    if (at === null || at > nowMs) break;
    earlier.push(run);
    if (earlier.length > MAX_SKIPPED_RECORDS) {
      earlier.shift();
      unrecorded++;
    }
    run = at;
  }
  // Past the walk's end (years of a minutely job), the rest is not counted one by one.
  const next = at !== null && at > nowMs ? at : cron.nextRun(new Date(nowMs))?.getTime() ?? null;
  return { run, skipped: earlier, unrecorded, next };
}
