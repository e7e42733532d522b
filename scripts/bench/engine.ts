/**
 * Round trips per second of small `covers` requests through the engine host (full validation on
 * both sides: the host checks what it sends and every response, serveEngine checks every request
 * and result), one in flight and 64 in flight, against vscode-jsonrpc over stdio under Node in the
 * same run. Prints the median of the rounds and the ratios. Both sides warm up with the same number
 * of requests first, so the rounds measure code the JIT has optimized, not the first calls.
 *
 * `deno run -A scripts/bench/engine.ts [--requests 50000] [--warmup 5000] [--rounds 3]`
 */
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { EngineHost, type Model, type Question } from "../../engine/mod.ts";

const here = fileURLToPath(new URL("./engine/", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const nodeDir = `${root}.tmp/bench-node`;
const VSCODE_JSONRPC = "vscode-jsonrpc@10.0.0";

const question: Question = {
  kind: "holds",
  subject: "deposit",
  schedule: "all",
  free: ["schedule"],
  condition: { name: "no lost update" },
};
const model: Model = {
  graphs: {
    version: 1,
    subject: "deposit",
    actions: [{ name: "deposit", kind: "process" }],
    states: [{ name: "balance", kind: "variable" }],
  },
};

async function sandbar(total: number, inflight: number, warmup: number): Promise<number> {
  await using host = await EngineHost.start({
    name: "bench",
    command: [Deno.execPath(), "run", "--quiet", "-A", "covers_engine.ts"],
    cwd: here,
    env: {},
    protocol: 1,
    answers: ["holds"],
    model: ["graphs:1"],
    authority: "observed",
    concurrent: true,
  }, { maxInFlight: 64 });
  const window = async (n: number) => {
    let next = 0;
    const lane = async () => {
      while (next < n) {
        next++;
        await host.covers(question, model);
      }
    };
    await Promise.all(Array.from({ length: inflight }, lane));
  };
  await window(warmup);
  const started = performance.now();
  await window(total);
  return total / ((performance.now() - started) / 1000);
}

async function run(command: string, args: string[], env: Record<string, string> = {}) {
  const output = await new Deno.Command(command, { args, env, stderr: "inherit" }).output();
  if (!output.success) throw new Error(`${command} ${args.join(" ")} failed`);
  return new TextDecoder().decode(output.stdout);
}

async function baseline(total: number, inflight: number, warmup: number): Promise<number> {
  const out = await run(
    "node",
    [`${here}vscode_jsonrpc.mjs`, "client", `${total}`, `${inflight}`, `${warmup}`],
    {
      BENCH_NODE_MODULES: `${nodeDir}/node_modules`,
      BENCH_PARAMS: JSON.stringify({ question, model }),
    },
  );
  return JSON.parse(out).rps;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs the bench and prints a table; returns the medians. */
export async function main(argv: string[] = Deno.args): Promise<Record<string, number>> {
  const { values } = parseArgs({
    args: argv,
    options: {
      requests: { type: "string" },
      warmup: { type: "string" },
      rounds: { type: "string" },
    },
  });
  const total = Number(values.requests ?? 50_000);
  const warmup = Number(values.warmup ?? 5_000);
  const rounds = Number(values.rounds ?? 3);
  await run("npm", [
    "install",
    "--silent",
    "--no-audit",
    "--no-fund",
    "--prefix",
    nodeDir,
    VSCODE_JSONRPC,
  ]);
  const samples: Record<string, number[]> = {};
  const add = (key: string, rps: number) => (samples[key] ??= []).push(rps);
  // Interleaved rounds, so drift on a noisy machine hits both sides alike.
  for (let round = 1; round <= rounds; round++) {
    for (const inflight of [1, 64]) {
      add(`sandbar@${inflight}`, await sandbar(total, inflight, warmup));
      add(`vscode-jsonrpc@${inflight}`, await baseline(total, inflight, warmup));
    }
    console.error(`round ${round}/${rounds} done`);
  }
  const medians = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
  console.log(
    `engine covers round trips/s, ${total} requests after ${warmup}, median of ${rounds} rounds`,
  );
  for (const [key, runs] of Object.entries(samples)) {
    const all = runs.map((r) => Math.round(r)).join(" · ");
    console.log(`  ${key.padEnd(20)} ${String(Math.round(medians[key])).padStart(8)}   (${all})`);
  }
  for (const inflight of [1, 64]) {
    const ratio = medians[`sandbar@${inflight}`] / medians[`vscode-jsonrpc@${inflight}`];
    console.log(`  ratio at ${inflight} in flight: ${ratio.toFixed(2)}x vscode-jsonrpc`);
  }
  return medians;
}

if (import.meta.main) await main();
