/**
 * Time from `Sandbox.create()` to the first command's result (a local sandbox: supervisor,
 * bubblewrap, relay, the narrowed server, the gateway, `commands.run("true")`), against
 * starting the bare server process (`deno run -A server/main.ts` until its listening line) in
 * the same run, interleaved so both see the same machine. Prints the p50 and p90 of each, the
 * ratio, and where the sandbox's time goes (create until it answers, then the first command).
 * Goal: sandbox p50 under 300 ms on a 2-core machine.
 *
 * `deno run -A scripts/bench/sandbox.ts [--runs 20]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { Sandbox } from "../../sdk/mod.ts";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));
const WARMUP = 2;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

/** The bare server: spawn until its listening line, in ms; then stop it. */
async function bareServer(root: string): Promise<number> {
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--port", "0", "--pty-port", "0", "--root", root],
    env: { SVC_SERVER_TOKEN: "bench-token-0123456789abcdef" },
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes('"listening"')) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the server exited before listening");
    out += value;
  }
  const ms = performance.now() - t0;
  child.kill("SIGTERM");
  await reader.cancel();
  await child.status;
  return ms;
}

/** A sandbox: create, first command; the two phases in ms; then kill it. */
async function sandboxRun(): Promise<{ total: number; create: number; first: number }> {
  const t0 = performance.now();
  const sandbox = await Sandbox.create({ timeout: 120 });
  const t1 = performance.now();
  try {
    const r = await sandbox.commands.run("true");
    if (r.exitCode !== 0) throw new Error(`true failed: ${r.stderr}`);
    const t2 = performance.now();
    return { total: t2 - t0, create: t1 - t0, first: t2 - t1 };
  } finally {
    await sandbox.kill();
  }
}

/** Run the benchmark; returns the p50 ratio sandbox / bare server. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({ args, options: { runs: { type: "string", default: "20" } } });
  const runs = Number(values.runs);
  const home = await Deno.makeTempDir({ prefix: "sandbar-bench-" });
  const root = await Deno.makeTempDir({ prefix: "sandbar-bench-root-" });
  const previous = Deno.env.get("SANDBAR_HOME");
  Deno.env.set("SANDBAR_HOME", home);
  const bare: number[] = [];
  const total: number[] = [];
  const create: number[] = [];
  const first: number[] = [];
  try {
    for (let i = 0; i < WARMUP + runs; i++) {
      const b = await bareServer(root);
      const s = await sandboxRun();
      if (i < WARMUP) continue;
      bare.push(b);
      total.push(s.total);
      create.push(s.create);
      first.push(s.first);
    }
  } finally {
    if (previous === undefined) Deno.env.delete("SANDBAR_HOME");
    else Deno.env.set("SANDBAR_HOME", previous);
    await Deno.remove(home, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
  const fmt = (v: number[]) =>
    `p50 ${percentile(v, 0.5).toFixed(0)} ms, p90 ${percentile(v, 0.9).toFixed(0)} ms`;
  const ratio = percentile(total, 0.5) / percentile(bare, 0.5);
  console.log(`runs: ${runs} each, interleaved`);
  console.log(`bare server (spawn to listening line)       ${fmt(bare)}`);
  console.log(`Sandbox.create() to first command's result  ${fmt(total)}`);
  console.log(`  of which create (until it answers)        ${fmt(create)}`);
  console.log(`  of which the first commands.run("true")   ${fmt(first)}`);
  console.log(`ratio sandbox / bare server (p50)           ${ratio.toFixed(2)}`);
  const goal = percentile(total, 0.5) < 300;
  console.log(`goal: sandbox p50 under 300 ms: ${goal ? "met" : "NOT met"}`);
  return ratio;
}

if (import.meta.main) await main();
