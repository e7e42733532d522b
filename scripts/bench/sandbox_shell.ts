/**
 * `shell` of `true` in a warm local sandbox (the SDK's `server.process.shell`, through the
 * gateway and relay to the in-sandbox server, which starts `true` as the root of a process tree)
 * against a bare `Deno.Command` spawn of `true` on the host, in the same run, interleaved so both
 * see the same machine. Prints the p50 and p90 of each, their ratio, and how the sandbox's server
 * ends process trees (a cgroup delegated by the local provider, or the session fallback, as its
 * capabilities' `warnings` say).
 *
 * What it is for: the cost of ending process trees by cgroup inside a sandbox (issue 23). Run it
 * at two commits, alternated, and compare each run's ratio: the bare spawn is the baseline that
 * absorbs the machine's load at the time.
 *
 * `deno run -A scripts/bench/sandbox_shell.ts [--runs 300]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { Sandbox } from "../../sdk/mod.ts";

const WARMUP = 20;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

/** Run the benchmark; returns the p50 ratio of the sandbox's `shell` to a bare spawn. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({ args, options: { runs: { type: "string", default: "300" } } });
  const runs = Number(values.runs);
  await using sandbox = await Sandbox.create({ timeout: 600 });
  const warnings = (await sandbox.server.discover()).warnings;
  const mode = warnings.some((w) => w.startsWith("Process trees")) ? "session" : "cgroup";
  const shell = async () => {
    const r = await sandbox.server.process.shell("true");
    if (r.exitCode !== 0) throw new Error(`true failed: ${r.stderr}`);
  };
  const bare = async () => {
    const out = await new Deno.Command("true", { stdout: "piped", stderr: "piped" }).output();
    if (!out.success) throw new Error("true failed");
  };
  const rows: [string, () => Promise<void>, number[]][] = [
    [`sandbox shell true (trees: ${mode})`, shell, []],
    ["bare Deno.Command true (host)", bare, []],
  ];
  for (let i = 0; i < WARMUP; i++) for (const [, run] of rows) await run();
  for (let i = 0; i < runs; i++) {
    for (const [, run, ms] of i % 2 ? rows : [...rows].reverse()) {
      const t0 = performance.now();
      await run();
      ms.push(performance.now() - t0);
    }
  }
  const [load] = Deno.loadavg();
  console.log(`runs ${runs}, load ${load.toFixed(1)}`);
  for (const [name, , ms] of rows) {
    console.log(
      `${name.padEnd(40)} p50 ${percentile(ms, 0.5).toFixed(2)} ms  p90 ${
        percentile(ms, 0.9).toFixed(2)
      } ms`,
    );
  }
  const ratio = percentile(rows[0][2], 0.5) / percentile(rows[1][2], 0.5);
  console.log(`ratio (sandbox shell p50 / bare p50) ${ratio.toFixed(2)}`);
  return ratio;
}

if (import.meta.main) await main();
