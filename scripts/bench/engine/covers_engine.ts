/** The bench's engine: concurrent, answers every `covers` at once, validated by serveEngine. */
import { serveEngine } from "../../../engine/mod.ts";

await serveEngine({
  describe: {
    name: "bench",
    version: "1.0.0",
    protocol: 1,
    answers: ["holds"],
    model: ["graphs:1"],
    authority: "observed",
    concurrent: true,
  },
  covers: () => ({ covers: true }),
});
