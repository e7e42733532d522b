/**
 * Benchmark: the egress proxy (`server/egress/`) against no proxy, in the same run.
 *
 * - Large download: curl fetches 256 MiB from an origin on 127.0.0.2, straight and through the
 *   proxy (plain HTTP proxying), alternating; throughput in MB/s. Goal: through ≥ 0.8 of direct.
 * - Small requests: a client makes 300 requests one after another, each on a new connection,
 *   straight and through the proxy; requests per second and the p50 latency, whose difference
 *   is what the proxy adds to setting up a connection (decide, resolve, decide, connect, audit).
 *   Goal: under 2 ms added at p50.
 *
 * - The same large download from inside a local sandbox (the relay's bridge, the Unix socket,
 *   the supervisor's proxy), when bubblewrap is here: the whole path a sandbox's program takes.
 *
 * The proxy runs in this process with an audit sink that keeps the lines in memory (so the
 * audit's cost is in the numbers); origin and clients are processes of their own. Medians of 5
 * rounds. The machine is shared: read the ratios, not the absolute numbers.
 *
 * Run: `deno run -A scripts/bench/network.ts` (needs `curl`).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { EgressProxy } from "../../server/egress/proxy.ts";
import { NetworkRules } from "../../server/egress/rules.ts";
import type { AuditEntry } from "../../server/pipeline/audit.ts";
import { median } from "./load.ts";
import { Sandbox } from "../../sdk/mod.ts";
import { findBwrap } from "../../sdk/providers/local/launch.ts";

const ORIGIN = fileURLToPath(new URL("./network/origin.ts", import.meta.url));
const CLIENT = fileURLToPath(new URL("./network/client.ts", import.meta.url));
const BIG_MB = 256;
const SMALL_N = 300;

async function startOrigin(): Promise<{ port: number; child: Deno.ChildProcess }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ORIGIN],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the origin ended before listening");
    text += value;
  }
  reader.releaseLock();
  child.stdout.cancel().catch(() => {});
  return { port: JSON.parse(text).port, child };
}

async function curlSpeed(url: string, proxy?: string): Promise<number> {
  const args = ["-sS", "-o", "/dev/null", "-w", "%{speed_download}", "--noproxy", ""];
  if (proxy) args.push("-x", proxy);
  const out = await new Deno.Command("curl", { args: [...args, url], stdout: "piped" }).output();
  if (!out.success) throw new Error(`curl failed for ${url}`);
  return Number(new TextDecoder().decode(out.stdout)) / 1e6;
}

async function small(originPort: number, proxyPort?: number) {
  const args = ["run", "-A", CLIENT, String(SMALL_N), String(originPort)];
  if (proxyPort) args.push(String(proxyPort));
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "piped" }).output();
  if (!out.success) throw new Error("the small-request client failed");
  return JSON.parse(new TextDecoder().decode(out.stdout)) as { p50Ms: number; rps: number };
}

/** Run the benchmark and print the result. */
export async function main(rounds = 5) {
  const origin = await startOrigin();
  const audit: AuditEntry[] = [];
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "bench",
    rules: NetworkRules.compile({ allow: ["127.0.0.2"] }),
    audit: (e) => audit.length < 100_000 && audit.push(e),
  });
  const proxyUrl = `http://127.0.0.1:${proxy.port}`;
  const big = `http://127.0.0.2:${origin.port}/big?mb=${BIG_MB}`;
  const r = {
    bigDirect: [] as number[],
    bigProxy: [] as number[],
    rpsDirect: [] as number[],
    rpsProxy: [] as number[],
    p50Direct: [] as number[],
    p50Proxy: [] as number[],
  };
  try {
    await curlSpeed(big);
    await curlSpeed(big, proxyUrl);
    for (let i = 0; i < rounds; i++) {
      r.bigDirect.push(await curlSpeed(big));
      r.bigProxy.push(await curlSpeed(big, proxyUrl));
      const d = await small(origin.port);
      const p = await small(origin.port, proxy.port);
      r.rpsDirect.push(d.rps);
      r.rpsProxy.push(p.rps);
      r.p50Direct.push(d.p50Ms);
      r.p50Proxy.push(p.p50Ms);
    }
  } finally {
    await proxy.close();
    origin.child.kill();
    await origin.child.status;
  }
  const sandboxSpeeds: number[] = [];
  if (findBwrap()) {
    const again = await startOrigin();
    try {
      await using sandbox = await Sandbox.create({ network: { allow: ["127.0.0.2"] } });
      const url = `http://127.0.0.2:${again.port}/big?mb=${BIG_MB}`;
      for (let i = 0; i < rounds; i++) {
        const out = await sandbox.commands.run(
          `curl -sS -o /dev/null -w '%{speed_download}' ${url}`,
          { timeout: 120 },
        );
        sandboxSpeeds.push(Number(out.stdout) / 1e6);
      }
    } finally {
      again.child.kill();
      await again.child.status;
    }
  }
  const m = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, median(v)]));
  const ratio = m.bigProxy / m.bigDirect;
  const added = m.p50Proxy - m.p50Direct;
  console.log(`large download (${BIG_MB} MiB, curl), median of ${rounds}:`);
  console.log(
    `  direct ${m.bigDirect.toFixed(0)} MB/s, through the proxy ${m.bigProxy.toFixed(0)} MB/s`,
  );
  console.log(`  ratio ${ratio.toFixed(2)} (goal ≥ 0.8): ${ratio >= 0.8 ? "met" : "NOT met"}`);
  console.log(
    `small requests (${SMALL_N} on new connections, one at a time), median of ${rounds}:`,
  );
  console.log(`  direct ${m.rpsDirect.toFixed(0)} req/s (p50 ${m.p50Direct.toFixed(2)} ms)`);
  console.log(
    `  through the proxy ${m.rpsProxy.toFixed(0)} req/s (p50 ${m.p50Proxy.toFixed(2)} ms)`,
  );
  console.log(
    `  added per connection at p50: ${added.toFixed(2)} ms (goal < 2 ms): ${
      added < 2 ? "met" : "NOT met"
    }`,
  );
  console.log(`  (${audit.length} audit lines written)`);
  if (sandboxSpeeds.length > 0) {
    const inside = median(sandboxSpeeds);
    console.log(
      `large download from inside a local sandbox (bridge, socket, proxy): ${
        inside.toFixed(0)
      } MB/s, ${(inside / m.bigDirect).toFixed(2)} of direct`,
    );
  }
  return { ratio, added };
}

if (import.meta.main) await main();
