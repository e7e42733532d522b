/**
 * `shell` of `true` through the real server (HTTP, the pipeline, the guards, a new process group,
 * bash) against a bare `Deno.Command` spawn of `true` in this process, in the same run,
 * interleaved so both see the same machine. Prints the p50 of each, the p90, and the ratio
 * (goal: at most 1.3). Two more baselines show where the gap is: a bare spawn of `setsid true`
 * (the floor of starting a process as the leader of its own group, which the server must do so
 * a kill reaches grandchildren) and of `bash -c true` (what running a shell string costs
 * without the server's fast path for plain commands).
 *
 * `deno run -A scripts/bench/process.ts [--runs 400]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { startTestServer } from "../../tests/helpers/server.ts";

const WARMUP = 30;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** Run the benchmark; returns the p50 ratio. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({ args, options: { runs: { type: "string", default: "400" } } });
  const runs = Number(values.runs);
  await using server = await startTestServer();
  const body = JSON.stringify({ cmd: "true" });
  const viaServer = async () => {
    const res = await server.fetch("/process/shell", {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    const result = await res.json();
    if (result.exit_code !== 0) throw new Error(`shell failed: ${JSON.stringify(result)}`);
  };
  const bare = (program: string, args: string[]) => async () => {
    const out = await new Deno.Command(program, { args, stdout: "piped", stderr: "piped" })
      .output();
    if (!out.success) throw new Error(`${program} failed`);
  };
  const bareTrue = bare("true", []);
  const bareBash = bare("bash", ["-c", "true"]);
  const bareSetsid = bare("setsid", ["true"]);
  for (let i = 0; i < WARMUP; i++) {
    await viaServer();
    await bareTrue();
    await bareBash();
    await bareSetsid();
  }
  const server_: number[] = [];
  const trueTimes: number[] = [];
  const bashTimes: number[] = [];
  const setsidTimes: number[] = [];
  for (let i = 0; i < runs; i++) {
    server_.push(await timed(viaServer));
    trueTimes.push(await timed(bareTrue));
    bashTimes.push(await timed(bareBash));
    setsidTimes.push(await timed(bareSetsid));
  }
  const p50 = (v: number[]) => percentile(v, 0.5);
  const p90 = (v: number[]) => percentile(v, 0.9);
  const fmt = (n: number) => `${n.toFixed(3)} ms`;
  console.log(`runs: ${runs} each, interleaved, after ${WARMUP} warm-up rounds`);
  console.log(`server shell "true"        p50 ${fmt(p50(server_))}  p90 ${fmt(p90(server_))}`);
  console.log(`bare Deno.Command true     p50 ${fmt(p50(trueTimes))}  p90 ${fmt(p90(trueTimes))}`);
  console.log(`bare Deno.Command bash -c  p50 ${fmt(p50(bashTimes))}  p90 ${fmt(p90(bashTimes))}`);
  console.log(
    `bare Deno.Command setsid   p50 ${fmt(p50(setsidTimes))}  p90 ${fmt(p90(setsidTimes))}`,
  );
  const ratio = p50(server_) / p50(trueTimes);
  console.log(`ratio server / bare true (p50): ${ratio.toFixed(2)} (goal <= 1.3)`);
  console.log(
    `ratio server / bare bash -c true (p50): ${(p50(server_) / p50(bashTimes)).toFixed(2)}`,
  );
  console.log(
    `ratio server / bare setsid true (p50): ${(p50(server_) / p50(setsidTimes)).toFixed(2)}`,
  );
  return ratio;
}

if (import.meta.main) await main();
