/**
 * `run_code` of `print(1)` in a warm Python context through the real server (HTTP, the pipeline,
 * the kernel bridge, ipykernel) against a one-shot `python3 -c "print(1)"` started in this
 * process, in the same run, interleaved in a random order each round. Prints the p50 and p90 of
 * each and the ratio (goal: the warm context at least 3x faster).
 *
 * Beside them, the floor: the same `print(1)` sent by `jupyter_client` alone to an ipykernel
 * started as the server starts it (`jupyter_floor.ts`), so the ratio the goal asks for can be
 * read against the best any bridge could reach: `python3 -c` time over the floor's.
 *
 * Then the cold case: a new context and its first run (a fresh ipykernel), p50 over a few
 * rounds, printed beside E2B's published start figure. E2B's code interpreter resumes a
 * snapshot whose Jupyter kernel is already running, so its figure has no kernel start in it.
 *
 * `deno run -A scripts/bench/code.ts [--runs 200] [--cold 8]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { kernelPython } from "../../server/code/languages.ts";
import { startTestServer } from "../../tests/helpers/server.ts";
import { Http1Client } from "./http1_client.ts";
import { startJupyterFloor } from "./jupyter_floor.ts";

const WARMUP = 10;

/** E2B's published sandbox start time ("~150 ms"); its kernel is running in the snapshot. */
const E2B_START_MS = 150;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

/** Run the benchmark; returns how many times faster the warm context is than `python3 -c`. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { runs: { type: "string", default: "200" }, cold: { type: "string", default: "8" } },
  });
  const runs = Number(values.runs);
  const coldRuns = Number(values.cold);
  const python = await kernelPython();
  if (!python) throw new Error("no python3 with ipykernel (apt-get install python3-ipykernel)");
  await using server = await startTestServer();
  using client = await Http1Client.connect(server.url, {
    authorization: `Bearer ${server.token}`,
  });
  const call = async (body: Record<string, unknown>) => {
    const res = await client.request("POST", "/code/run", JSON.stringify(body));
    const got = JSON.parse(res.text);
    if (res.status >= 300) throw new Error(`run_code: ${res.text}`);
    return got;
  };
  const ctx = await call({ action: "create_context", language: "python" });
  await using floor = await startJupyterFloor(python);
  const cases: [string, () => Promise<void>][] = [
    ["warm context print(1)", async () => {
      const r = await call({ code: "print(1)", context_id: ctx.id });
      if (r.text !== "1") throw new Error(`unexpected: ${JSON.stringify(r)}`);
    }],
    ["jupyter_client alone print(1)", () => floor.run()],
    ["one-shot python3 -c print(1)", async () => {
      const out = await new Deno.Command(python, {
        args: ["-c", "print(1)"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!out.success) throw new Error("python3 failed");
    }],
  ];
  const times = new Map(cases.map(([name]) => [name, [] as number[]]));
  for (let i = 0; i < WARMUP + runs; i++) {
    for (const [name, run] of [...cases].sort(() => Math.random() - 0.5)) {
      const t0 = performance.now();
      await run();
      if (i >= WARMUP) times.get(name)!.push(performance.now() - t0);
    }
  }
  const cold: number[] = [];
  for (let i = 0; i < coldRuns; i++) {
    const t0 = performance.now();
    const fresh = await call({ action: "create_context", language: "python" });
    const r = await call({ code: "print(1)", context_id: fresh.id });
    cold.push(performance.now() - t0);
    if (r.text !== "1") throw new Error(`unexpected: ${JSON.stringify(r)}`);
    await call({ action: "remove_context", context_id: fresh.id });
  }
  const fmt = (n: number) => `${n.toFixed(2)} ms`;
  console.log(`runs: ${runs} each, interleaved, after ${WARMUP} warm-up rounds`);
  for (const [name, v] of times) {
    console.log(
      `${name.padEnd(30)} p50 ${fmt(percentile(v, 0.5))}  p90 ${fmt(percentile(v, 0.9))}`,
    );
  }
  const speedup = percentile(times.get("one-shot python3 -c print(1)")!, 0.5) /
    percentile(times.get("warm context print(1)")!, 0.5);
  const bound = percentile(times.get("one-shot python3 -c print(1)")!, 0.5) /
    percentile(times.get("jupyter_client alone print(1)")!, 0.5);
  console.log(`warm context is ${speedup.toFixed(1)}x faster than python3 -c (p50; goal >= 3)`);
  console.log(
    `  the floor, jupyter_client alone, is ${bound.toFixed(1)}x faster than python3 -c: ` +
      `what any bridge to ipykernel could reach here`,
  );
  console.log(
    `cold: new context + first run p50 ${fmt(percentile(cold, 0.5))} over ${coldRuns} ` +
      `(E2B publishes ~${E2B_START_MS} ms to start a sandbox, its kernel already running)`,
  );
  return speedup;
}

if (import.meta.main) await main();
