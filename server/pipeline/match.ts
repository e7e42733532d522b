/**
 * Step 1 of the pipeline, match: the server's Hono router. Routes without parameters are found
 * by one map lookup, the rest by Hono's TrieRouter. Hono's fastest router (RegExpRouter) cannot take the OpenAI Agents paths
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
 * @example A static route wins over a parameter route
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { StaticFirstRouter } from "./match.ts";
 * const app = new Hono({ router: new StaticFirstRouter() });
 * app.get("/v1/agents/:agent_id", (c) => c.text(`agent ${c.req.param("agent_id")}`));
 * app.get("/v1/agents/sessions", (c) => c.text("sessions"));
 * assert.equal(await (await app.request("/v1/agents/sessions")).text(), "sessions");
 * assert.equal(await (await app.request("/v1/agents/a1")).text(), "agent a1");
 * ```
 */
export class StaticFirstRouter<T> implements Router<T> {
  /** Shown by Hono in errors. */
  readonly name = "StaticFirstRouter";
  // By method, then by path length, then compared with `===`: a request's path is a fresh
  // string, and hashing it for a map lookup cost several times more than these few compares.
  readonly #static = new Map<string, StaticRoute<T>[][]>();
  readonly #trie = new TrieRouter<T>();

  /** Add a route. */
  add(method: string, path: string, handler: T): void {
    if (path.includes(":") || path.includes("*")) {
      this.#trie.add(method, path, handler);
      return;
    }
    let byLength = this.#static.get(method);
    if (!byLength) this.#static.set(method, byLength = []);
    const bucket = byLength[path.length] ??= [];
    const found = bucket.find((r) => r.path === path);
    if (found) found.result[0].push([handler, {}]);
    else bucket.push({ path, result: [[[handler, {}]]] });
  }

  /** Match a request. */
  match(method: string, path: string): Result<T> {
    const bucket = this.#static.get(method)?.[path.length];
    if (bucket !== undefined) {
      for (const route of bucket) if (route.path === path) return route.result;
    }
    return this.#trie.match(method, path);
  }
}

interface StaticRoute<T> {
  path: string;
  result: [[T, Params][]];
}
