/**
 * Group commit: writes that arrive while the event loop is busy are run together in one SQLite
 * transaction, so that concurrent creates share one commit (one append to the write-ahead log
 * and its locking) instead of paying one each. Every write's promise settles only after the
 * transaction that holds it has committed, so an answer is never sent for a row that is not yet
 * durable as the store's `synchronous` setting makes it.
 *
 * A write that throws fails alone: the transaction is rolled back and the other writes of the
 * batch are run again without it, in a fresh transaction. A write must therefore do nothing but
 * store writes, and may run more than once; only its last run is committed. A commit that fails
 * fails every write of its batch, none of which is then stored.
 *
 * @module
 */

import { setImmediate } from "node:timers";

/** Begin, commit and roll back one transaction. */
export interface TransactionControl {
  /** Start a write transaction. */
  begin(): void;
  /** Commit it. */
  commit(): void;
  /** Roll it back (a no-op when none is open). */
  rollback(): void;
}

interface Unit {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** The most writes one transaction takes; more wait for the next one. */
export const MAX_BATCH = 256;

/**
 * When the batch is run: once the event loop has handled the I/O it has just delivered (the
 * check phase), so the requests that arrived together share one commit. A timer would do as
 * well under load, but holds a lone create for a millisecond; a microtask runs before the next
 * request's body is even read, and made groups of one.
 */
function nextTurn(fn: () => void): void {
  setImmediate(fn);
}

/**
 * Writes coalesced into shared transactions.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GroupCommit } from "./group_commit.ts";
 * const log: string[] = [];
 * const group = new GroupCommit({
 *   begin: () => log.push("begin"),
 *   commit: () => log.push("commit"),
 *   rollback: () => log.push("rollback"),
 * });
 * const [a, b] = await Promise.all([group.write(() => 1), group.write(() => 2)]);
 * assert.deepEqual([a, b], [1, 2]);
 * assert.deepEqual(log, ["begin", "commit"]);
 * ```
 */
export class GroupCommit {
  readonly #tx: TransactionControl;
  readonly #schedule: (fn: () => void) => void;
  #queue: Unit[] = [];
  #scheduled = false;

  /** Coalesce writes through `tx`; `schedule` runs a batch later (default: the next turn). */
  constructor(tx: TransactionControl, schedule: (fn: () => void) => void = nextTurn) {
    this.#tx = tx;
    this.#schedule = schedule;
  }

  /** How many writes wait for their transaction. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Run `run` in the next shared transaction; settles once that transaction has committed. */
  write<T>(run: () => T): Promise<T> {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    this.#queue.push({ run, resolve: resolve as (v: unknown) => void, reject });
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#schedule(() => this.flush());
    }
    return promise;
  }

  /** Run every waiting write now (the store calls this before it closes). */
  flush(): void {
    this.#scheduled = false;
    while (this.#queue.length > 0) {
      this.#runBatch(this.#queue.splice(0, MAX_BATCH));
    }
  }

  #runBatch(batch: Unit[]): void {
    while (batch.length > 0) {
      try {
        this.#tx.begin();
      } catch (e) {
        for (const u of batch) u.reject(e);
        return;
      }
      const results: unknown[] = new Array(batch.length);
      let failed = -1;
      let failure: unknown;
      for (let i = 0; i < batch.length; i++) {
        try {
          results[i] = batch[i].run();
        } catch (e) {
          failed = i;
          failure = e;
          break;
        }
      }
      if (failed >= 0) {
        // Undo the writes before it too, then run the others again without it.
        this.#rollback();
        batch[failed].reject(failure);
        batch.splice(failed, 1);
        continue;
      }
      try {
        this.#tx.commit();
      } catch (e) {
        this.#rollback();
        for (const u of batch) u.reject(e);
        return;
      }
      for (let i = 0; i < batch.length; i++) batch[i].resolve(results[i]);
      return;
    }
  }

  #rollback(): void {
    try {
      this.#tx.rollback();
    } catch {
      // SQLite may have rolled back on its own (a full disk, an I/O error): nothing is open.
    }
  }
}
