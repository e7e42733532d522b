/**
 * Keeping a long upload's memory flat. Deno hands each request body chunk over in a freshly
 * allocated buffer; V8 frees the dead ones only when its heuristics decide to collect, so a
 * gigabyte streamed to disk can leave a hundred megabytes or more of garbage resident for a
 * while. The upload writer asks for a young-generation collection (cheap: the chunks are young)
 * every few megabytes instead, through V8's `gc` function, exposed once at runtime. `node:v8` and
 * `node:vm` are loaded on the first collection, not at the server's start (Node's layers cost the
 * start path CPU; see `scripts/bench/sandbox.ts`).
 *
 * @module
 */

type GcFunction = (options?: { type?: "minor" | "major" }) => void;

let collect: GcFunction | null | undefined;

/**
 * Collect the young generation now, where V8 allows it; a no-op elsewhere.
 */
export async function collectYoungGarbage(): Promise<void> {
  if (collect === undefined) {
    try {
      const [{ default: v8 }, { default: vm }] = await Promise.all([
        import("node:v8"),
        import("node:vm"),
      ]);
      v8.setFlagsFromString("--expose-gc");
      collect = vm.runInNewContext("gc") as GcFunction;
    } catch {
      collect = null;
    }
  }
  collect?.({ type: "minor" });
}
