/**
 * The server's Hono router: routes without parameters are found by one map lookup, the rest by
 * Hono's TrieRouter. Hono's fastest router (RegExpRouter) cannot take the OpenAI Agents paths
 * (`/v1/agents/sessions` beside `/v1/agents/:agent_id`), so Hono falls back to the trie for
 * everything, and the trie walk was a visible share of the busiest static routes' cost.
 * A static route wins over a parameter route that also matches, as the app's route order wants.
 *
 * @module
 */

import type { Params, Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/**
 * Static routes by map, parameter routes by trie.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { StaticFirstRouter } from "./router.ts";
 * const app = new Hono({ router: new StaticFirstRouter() });
 * ```
 */
export class StaticFirstRouter<T> implements Router<T> {
  /** Shown by Hono in errors. */
  readonly name = "StaticFirstRouter";
  readonly #static = new Map<string, [[T, Params][]]>();
  readonly #trie = new TrieRouter<T>();

  /** Add a route. */
  add(method: string, path: string, handler: T): void {
    if (path.includes(":") || path.includes("*")) {
      this.#trie.add(method, path, handler);
      return;
    }
    const key = `${method} ${path}`;
    const found = this.#static.get(key);
    if (found) found[0].push([handler, {}]);
    else this.#static.set(key, [[[handler, {}]]]);
  }

  /** Match a request. */
  match(method: string, path: string): Result<T> {
    return this.#static.get(`${method} ${path}`) ?? this.#trie.match(method, path);
  }
}
