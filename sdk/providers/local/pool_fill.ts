/**
 * The warm pool's filler (`pool.ts`): started detached by a create that found its pool short,
 * it starts sandboxes until the pool holds its size, then exits.
 *
 * ```sh
 * deno run -A … pool_fill.ts $SANDBAR_HOME <key> <size>
 * ```
 *
 * @module
 */

import { fillPool } from "./index.ts";
import { FILL_DELAY_MS } from "./pool.ts";

if (import.meta.main) {
  const [home, key, size] = Deno.args;
  if (!home || !key || !/^\d+$/.test(size ?? "")) {
    console.error("usage: pool_fill.ts SANDBAR_HOME KEY SIZE");
    Deno.exit(2);
  }
  // SIGTERM (`LocalProvider.drainPool`): stop after the sandbox being started, which is killed.
  const stop = new AbortController();
  Deno.addSignalListener("SIGTERM", () => stop.abort());
  try {
    const started = await fillPool(home, key, Number(size), stop.signal, FILL_DELAY_MS);
    console.error(`sandbar pool ${key}: started ${started}`);
  } catch (e) {
    console.error(`sandbar pool ${key}: ${(e as Error).message}`);
    Deno.exit(1);
  }
  Deno.exit(0);
}
