/**
 * Keeping a long upload's memory flat. Deno hands each request body chunk over in a freshly
 * allocated buffer; V8 frees the dead ones only when its heuristics decide to collect, so a
 * gigabyte streamed to disk can leave a hundred megabytes or more of garbage resident for a
 * while. The upload writer asks for a young-generation collection (cheap: the chunks are young)
 * every few megabytes instead, through V8's `gc` function, exposed once at runtime.
 *
 * @module
 */

import v8 from "node:v8";
import vm from "node:vm";

type GcFunction = (options?: { type?: "minor" | "major" }) => void;

let collect: GcFunction | null | undefined;

/**
 * Collect the young generation now, where V8 allows it; a no-op elsewhere.
 */
export function collectYoungGarbage(): void {
  if (collect === undefined) {
    try {
      v8.setFlagsFromString("--expose-gc");
      collect = vm.runInNewContext("gc") as GcFunction;
    } catch {
      collect = null;
    }
  }
  collect?.({ type: "minor" });
}
