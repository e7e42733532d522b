/**
 * {@linkcode FrozenSet}: a `Set` that cannot change after it is made, for a sandbox's
 * capability set (Python's `frozenset`). A `ReadonlySet` type alone would still hand out the
 * live set, which a cast could change under the sandbox's modules.
 *
 * @module
 */

/**
 * A set whose `add`, `delete` and `clear` throw `TypeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FrozenSet } from "./frozen_set.ts";
 *
 * const set = new FrozenSet(["files", "shell"]);
 * assert.ok(set.has("shell"));
 * assert.throws(() => (set as Set<string>).add("code"), TypeError);
 * assert.deepEqual([...set], ["files", "shell"]);
 * ```
 */
export class FrozenSet<T> extends Set<T> {
  #frozen = false;

  /** A set of `values`, frozen at once. */
  constructor(values: Iterable<T> = []) {
    super();
    for (const value of values) super.add(value);
    this.#frozen = true;
    Object.freeze(this);
  }

  #refuse(): never {
    throw new TypeError("This set is immutable");
  }

  /** Throws `TypeError`: the set is immutable (only while it is being made does it add). */
  override add(value: T): this {
    if (this.#frozen) this.#refuse();
    return super.add(value);
  }

  /** Throws `TypeError`: the set is immutable. */
  override delete(_value: T): boolean {
    this.#refuse();
  }

  /** Throws `TypeError`: the set is immutable. */
  override clear(): void {
    this.#refuse();
  }
}
