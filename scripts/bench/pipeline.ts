/**
 * Benchmark: requests per second of an authenticated `GET /commands` through the full pipeline
 * (authenticate, admit, duplicate parameters, body limit, handler, audit `deny`), against a bare
 * `Deno.serve` returning the same body, with the same load generator (wrk) in the same run.
 * Server on CPU 0, wrk on CPU 1; runs alternate between the two, and each round's pair gives a
 * ratio, so drift on a shared machine hits both sides of a ratio alike. The median of the
 * rounds' ratios is the result (medians of each side are printed too). Goal: at least 0.8.
 *
 * Run: `deno run -A scripts/bench/pipeline.ts` (needs `wrk`: `apt-get install wrk`).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { have, median, startPinned, wrk } from "./load.ts";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));
const BARE = fileURLToPath(new URL("./pipeline/bare_server.ts", import.meta.url));
const TOKEN = "bench-token-0123456789abcdef";

/** Run the benchmark and print the result. */
export async function main(runs = 5, seconds = 4): Promise<{ ratio: number }> {
  if (!(await have("wrk"))) {
    console.log("pipeline: skipped, wrk is not installed (apt-get install wrk)");
    return { ratio: NaN };
  }
  const root = await Deno.makeTempDir({ prefix: "sandbar-bench-" });
  const policy = `${root}/policy.jsonc`;
  await Deno.writeTextFile(policy, JSON.stringify({ audit: "deny" }));
  const sandbar = await startPinned(
    [
      Deno.execPath(),
      "run",
      "-A",
      MAIN,
      "--port",
      "0",
      "--pty-port",
      "0",
      "--root",
      root,
      "--policy",
      policy,
    ],
    { SVC_SERVER_TOKEN: TOKEN },
  );
  const bare = await startPinned([Deno.execPath(), "run", "-A", BARE]);
  const auth = { authorization: `Bearer ${TOKEN}` };
  const check = await fetch(`${sandbar.url}/commands`, { headers: auth });
  const same = (await check.text()) === (await (await fetch(`${bare.url}/`)).text());
  const results = { sandbar: [] as number[], bare: [] as number[] };
  try {
    // Warm both up, then alternate so drift on a shared machine hits both alike.
    await wrk(`${sandbar.url}/commands`, auth, 2);
    await wrk(`${bare.url}/commands`, auth, 2);
    for (let i = 0; i < runs; i++) {
      const s = await wrk(`${sandbar.url}/commands`, auth, seconds);
      const b = await wrk(`${bare.url}/commands`, auth, seconds);
      if (s.errors > 0) throw new Error(`sandbar answered ${s.errors} non-2xx responses`);
      results.sandbar.push(s.rps);
      results.bare.push(b.rps);
    }
  } finally {
    await sandbar.stop();
    await bare.stop();
    await Deno.remove(root, { recursive: true });
  }
  const s = median(results.sandbar);
  const b = median(results.bare);
  const ratios = results.sandbar.map((v, i) => v / results.bare[i]);
  const ratio = median(ratios);
  console.log(
    `pipeline: GET /commands through the full pipeline vs bare Deno.serve (wrk, ${runs}x${seconds}s, 50 conns)`,
  );
  console.log(`  bodies identical: ${same}`);
  console.log(
    `  sandbar  median ${Math.round(s)} req/s  runs ${results.sandbar.map(Math.round).join(", ")}`,
  );
  console.log(
    `  bare     median ${Math.round(b)} req/s  runs ${results.bare.map(Math.round).join(", ")}`,
  );
  console.log(`  ratio per round ${ratios.map((r) => r.toFixed(2)).join(", ")}`);
  console.log(
    `  ratio (median of rounds) ${ratio.toFixed(2)} (goal >= 0.80) ${
      ratio >= 0.8 ? "MET" : "NOT MET"
    }`,
  );
  return { ratio };
}

if (import.meta.main) await main();
