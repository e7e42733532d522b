/**
 * Rate and concurrency accounting for admission, per identity and endpoint.
 *
 * Rate is a token bucket holding `rate_per_minute` tokens, refilled continuously, so a burst up
 * to the limit passes and then calls are spaced; `Retry-After` is the time until the next token.
 * Concurrency counts requests in flight, released when the response (or its streamed body) ends.
 *
 * @module
 */

interface Bucket {
  tokens: number;
  updated: number;
}

/**
 * Token buckets by key.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { RateLimiter } from "./rate_limits.ts";
 * const rl = new RateLimiter();
 * assert.equal(rl.take("agent/shell", 1, 0), 0); // admitted
 * assert.ok(rl.take("agent/shell", 1, 0) > 0); // refused: seconds until a retry may pass
 * ```
 */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();

  /** Take one token; returns 0 when admitted, else seconds until one is available. */
  take(key: string, perMinute: number, now = performance.now()): number {
    const perMs = perMinute / 60_000;
    let b = this.#buckets.get(key);
    if (!b) {
      b = { tokens: perMinute, updated: now };
      this.#buckets.set(key, b);
    }
    b.tokens = Math.min(perMinute, b.tokens + (now - b.updated) * perMs);
    b.updated = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return (1 - b.tokens) / perMs / 1000;
  }
}

/**
 * In-flight counters by key.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConcurrencyLimiter } from "./rate_limits.ts";
 * const cl = new ConcurrencyLimiter();
 * const release = cl.acquire("agent/shell", 1);
 * assert.equal(typeof release, "function");
 * assert.equal(cl.acquire("agent/shell", 1), undefined); // full
 * release!();
 * assert.equal(typeof cl.acquire("agent/shell", 1), "function");
 * ```
 */
export class ConcurrencyLimiter {
  readonly #inFlight = new Map<string, number>();

  /** Take a slot; returns its release function, or undefined when the limit is reached. */
  acquire(key: string, limit: number): (() => void) | undefined {
    const n = this.#inFlight.get(key) ?? 0;
    if (n >= limit) return undefined;
    this.#inFlight.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#inFlight.get(key) ?? 1) - 1;
      if (left <= 0) this.#inFlight.delete(key);
      else this.#inFlight.set(key, left);
    };
  }
}
