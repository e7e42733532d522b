/**
 * RFC 3339 date-times as the protocol's `deadline` carries them. `Date.parse` and zod's
 * `iso.datetime` each read a different subset: neither takes a leap second (`23:59:60Z`), and zod
 * refuses the lowercase `t` and `z` RFC 3339 section 5.6 allows. One reader here serves the schema
 * and both sides' timers, so what the schema accepts is exactly what the timers can read.
 *
 * @module
 */

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * The instant `text` names, in milliseconds since the epoch, or `undefined` when it is not an
 * RFC 3339 date-time (full date, full time, and a `Z` or numeric offset; either case of `T` and
 * `Z`). A leap second (`:60`) is the instant one second after `:59`, as POSIX time counts it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRfc3339 } from "@sandbar/sandbar/engine";
 *
 * assert.equal(parseRfc3339("2016-12-31t23:59:60z"), Date.parse("2017-01-01T00:00:00Z"));
 * assert.equal(parseRfc3339("2030-02-30T00:00:00Z"), undefined); // no such day
 * ```
 */
export function parseRfc3339(text: string): number | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) {
    return undefined;
  }
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  const sign = m[8].startsWith("-") ? -1 : 1;
  const offset = sign * (offsetHours * 60 + offsetMinutes) * 60_000;
  const utc = Date.UTC(year, month - 1, day, hour, minute, 0, 0);
  return utc + second * 1000 + fraction - offset;
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
