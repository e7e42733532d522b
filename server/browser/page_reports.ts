/**
 * What a page reported since the caller last asked: console messages, uncaught errors and
 * requests the URL guard refused. Each list keeps its newest entries up to a bound; what falls
 * off is counted, so a chatty page cannot grow the server's memory.
 *
 * @module
 */

/** One console message. */
export interface ConsoleMessage {
  /** `log`, `warn`, `error`, `info`, `debug`, … as the page's console reports it. */
  type: string;
  /** The message text. */
  text: string;
  /** Milliseconds since the epoch. */
  time: number;
}

/** An uncaught exception or unhandled rejection of the page. */
export interface PageError {
  /** The error's message. */
  message: string;
  /** Milliseconds since the epoch. */
  time: number;
}

/** A request the URL guard refused. */
export interface BlockedRequest {
  /** The URL (or `host:port` for a connection). */
  url: string;
  /** `url_denied` or `url_invalid`. */
  code: string;
  /** The rule that refused it. */
  rule: string;
  /** Milliseconds since the epoch. */
  time: number;
}

/** The body of `GET /browser/console`. */
export interface PageReportsSnapshot {
  /** Console messages. */
  messages: ConsoleMessage[];
  /** Page errors. */
  errors: PageError[];
  /** Refused requests. */
  blocked: BlockedRequest[];
  /** Entries thrown away since the last read. */
  dropped: number;
}

/** Entries kept per list. */
export const REPORTS_KEPT = 1000;

/**
 * The bounded buffers of one page.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { PageReports } from "./page_reports.ts";
 * const reports = new PageReports();
 * reports.message("log", "hi");
 * assert.equal(reports.take().messages[0].text, "hi");
 * assert.equal(reports.take().messages.length, 0); // taken once
 * ```
 */
export class PageReports {
  #messages: ConsoleMessage[] = [];
  #errors: PageError[] = [];
  #blocked: BlockedRequest[] = [];
  #dropped = 0;
  readonly #kept: number;

  /** Buffers keeping `kept` entries per list. */
  constructor(kept = REPORTS_KEPT) {
    this.#kept = kept;
  }

  #push<T>(list: T[], entry: T): void {
    list.push(entry);
    if (list.length > this.#kept) {
      list.shift();
      this.#dropped++;
    }
  }

  /** Record a console message. */
  message(type: string, text: string): void {
    this.#push(this.#messages, { type, text, time: Date.now() });
  }

  /** Record a page error. */
  error(message: string): void {
    this.#push(this.#errors, { message, time: Date.now() });
  }

  /** Record a refused request. */
  blocked(entry: Omit<BlockedRequest, "time">): void {
    this.#push(this.#blocked, { ...entry, time: Date.now() });
  }

  /** Everything since the last call, emptying the buffers. */
  take(): PageReportsSnapshot {
    const out = {
      messages: this.#messages,
      errors: this.#errors,
      blocked: this.#blocked,
      dropped: this.#dropped,
    };
    this.#messages = [];
    this.#errors = [];
    this.#blocked = [];
    this.#dropped = 0;
    return out;
  }
}
