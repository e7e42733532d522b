/**
 * List pages kept as their finished JSON text, keyed by the query, for as long as the store has
 * not been written: the busiest lists are then answered without SQLite, the way `GET /commands`
 * answers from a listing serialised once per change of the registry.
 *
 * Correctness rests on the store's write count: every statement that may change a row bumps it
 * before it runs, and so does every rollback, and a page read inside an open transaction is
 * never kept (it may show writes a rollback then undoes). A page is kept with the count it was
 * read at and answered only while the count is unchanged. The store is the only writer of its
 * database (the data directory is locked while a server has it open), so no write can go
 * unseen. Pages do not depend on who asks: scopes are checked before a list is answered.
 *
 * Bounded: at most {@linkcode MAX_PAGES} pages and {@linkcode MAX_TEXT_LENGTH} characters in all;
 * a page longer than {@linkcode MAX_PAGE_LENGTH} is answered and not kept.
 *
 * @module
 */

/** The most pages kept; when full, the cache starts afresh. */
export const MAX_PAGES = 512;

/** The longest key kept (a long metadata filter is answered, but not kept). */
export const MAX_KEY_LENGTH = 2048;

/** The most text kept, all pages together, in characters; when full, the cache starts afresh. */
export const MAX_TEXT_LENGTH = 16 * 1024 * 1024;

/** The longest page kept (100 agents with long instructions are answered, but not kept). */
export const MAX_PAGE_LENGTH = 1024 * 1024;

/**
 * Pages by key, all read at one write count.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PageCache } from "./page_cache.ts";
 * const cache = new PageCache();
 * cache.set("agent|desc|20", 7, "{}");
 * assert.equal(cache.get("agent|desc|20", 7), "{}");
 * assert.equal(cache.get("agent|desc|20", 8), undefined); // written since
 * cache.set("huge", 8, "x".repeat(2 * 1024 * 1024));
 * assert.equal(cache.get("huge", 8), undefined); // answered, but too long to keep
 * ```
 */
export class PageCache {
  #count = -1;
  #length = 0;
  readonly #pages = new Map<string, string>();

  /** The page kept for `key`, if it was read at write count `count`. */
  get(key: string, count: number): string | undefined {
    if (count !== this.#count) return undefined;
    return this.#pages.get(key);
  }

  /** Keep `text` as the page of `key` read at write count `count`. */
  set(key: string, count: number, text: string): void {
    if (key.length > MAX_KEY_LENGTH || text.length > MAX_PAGE_LENGTH) return;
    if (
      count !== this.#count || this.#pages.size >= MAX_PAGES ||
      this.#length + text.length > MAX_TEXT_LENGTH
    ) {
      this.#pages.clear();
      this.#length = 0;
      this.#count = count;
    }
    const old = this.#pages.get(key);
    if (old !== undefined) this.#length -= old.length;
    this.#pages.set(key, text);
    this.#length += text.length;
  }
}
