/**
 * Whether the page's main frame is between a navigation request and its `load`. A click that
 * submits a form starts a navigation the click itself does not wait for; the operations after
 * it (content, screenshot, …) wait for that navigation first, so they see the new page rather
 * than the old one or a blank one in between.
 *
 * @module
 */

/**
 * The main frame's navigation state.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { NavigationTracker } from "./navigation_tracker.ts";
 * const nav = new NavigationTracker();
 * nav.started(); // a click submitted a form
 * assert.equal(nav.pending, true);
 * const settled = nav.settled(30_000); // what the next operation waits for
 * nav.finished(); // the new page loaded
 * assert.equal(await settled, true);
 * assert.equal(nav.pending, false);
 * ```
 */
export class NavigationTracker {
  #pending: PromiseWithResolvers<void> | null = null;
  #count = 0;
  readonly #waiters = new Set<PromiseWithResolvers<boolean>>();

  /** Navigations started so far; compare two readings to see whether one started between. */
  get count(): number {
    return this.#count;
  }

  /** True while a navigation is under way. */
  get pending(): boolean {
    return this.#pending !== null;
  }

  /** A main-frame navigation request went out (redirect hops count as the same navigation). */
  started(): void {
    this.#count++;
    this.#pending ??= Promise.withResolvers<void>();
    for (const w of this.#waiters) w.resolve(true);
  }

  /** The main frame loaded, or its navigation failed. */
  finished(): void {
    this.#pending?.resolve();
    this.#pending = null;
  }

  /** Forget a navigation (the page was closed). */
  reset(): void {
    this.finished();
  }

  /**
   * Wait until more than `count` navigations have started, for at most `timeoutMs`. True when
   * one did.
   */
  async startedAfter(count: number, timeoutMs: number): Promise<boolean> {
    if (this.#count > count) return true;
    const started = Promise.withResolvers<boolean>();
    this.#waiters.add(started);
    const timer = setTimeout(() => started.resolve(false), timeoutMs);
    try {
      return await started.promise;
    } finally {
      clearTimeout(timer);
      this.#waiters.delete(started);
    }
  }

  /**
   * Wait for the navigation under way, if any, for at most `timeoutMs`. True when none is left.
   */
  async settled(timeoutMs: number): Promise<boolean> {
    const pending = this.#pending;
    if (!pending) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([pending.promise.then(() => true as const), expired]);
    } finally {
      clearTimeout(timer);
    }
  }
}
