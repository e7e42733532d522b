/**
 * Benchmark: the egress proxy (`server/egress/`) against no proxy, in the same run.
 *
 * - Large download: curl fetches N MiB (256 by default) from an origin on 127.0.0.2, straight
 *   and through the proxy by each of its ways in: plain HTTP forwarding (`-x`), a `CONNECT`
 *   tunnel (`-p -x`) and SOCKS5; then over TLS, straight, through a `CONNECT` tunnel (TLS end
 *   to end) and intercepted (a secret attached to the host: the proxy ends the client's TLS and
 *   makes its own). Every path does the same work as its baseline: the same curl, the same
 *   bytes (the size is checked), HTTP/1.1 both ways (`--http1.1` over TLS, since the proxy
 *   offers only that when it intercepts). Within a round the paths run one after another, the
 *   order turned by one each round; the ratio is given twice: of the medians, and the median of
 *   each round's own ratio (a proxied download against the baseline of the same round, which
 *   cancels most of a shared machine's slow drift).
 * - CPU per GiB moved (from `/proc`, where there is one): the origin's, curl's, and this
 *   process's, which runs the proxy and does nothing else while a download runs. It shows where
 *   the time goes, and bounds the ratio: on a machine whose cores are all busy, throughput
 *   follows the CPU a byte costs, so the ratio tends to (origin + curl) / (origin + curl +
 *   proxy).
 * - The same download from an origin paced to a fast link's speed (`--pace`, 200 MB/s), where
 *   the link, not the proxy, is what a user waits for.
 * - Small requests: a client makes 300 requests one after another, each on a new connection,
 *   straight and through the proxy; requests per second and the p50 latency, whose difference
 *   is what the proxy adds to setting up a connection (decide, resolve, decide, connect,
 *   audit). Goal: under 2 ms added at p50.
 * - Inside a local sandbox (the relay's bridge, the Unix socket, the supervisor's proxy), when
 *   bubblewrap is here, interleaved with direct downloads from the host.
 *
 * The proxies run in this process with an audit sink that keeps the lines in memory (so the
 * audit's cost is in the numbers); origins and clients are processes of their own. The machine
 * may be shared: read the ratios, not the absolute numbers, and run it more than once.
 *
 * Run: `deno run -A scripts/bench/network.ts [--rounds 7] [--mb 256] [--pace 200]` (needs
 * `curl`).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { EgressProxy } from "../../server/egress/proxy.ts";
import { NetworkRules } from "../../server/egress/rules.ts";
import { EgressCa } from "../../server/egress/tls_intercept.ts";
import type { AuditEntry } from "../../server/pipeline/audit.ts";
import { median } from "./load.ts";
import { Sandbox } from "../../sdk/mod.ts";
import { findBwrap } from "../../sdk/providers/local/launch.ts";

const ORIGIN = fileURLToPath(new URL("./network/origin.ts", import.meta.url));
const CLIENT = fileURLToPath(new URL("./network/client.ts", import.meta.url));
const SMALL_N = 300;
const GOAL = 0.8;
/** The TLS origin's name; the proxies resolve it to 127.0.0.2, curl is told the same. */
const TLS_HOST = "origin.bench.test";
const PLACEHOLDER = "sandbar-bench-placeholder-0123456789";

interface Origin {
  port: number;
  child: Deno.ChildProcess;
}

async function startOrigin(tls?: { cert: string; key: string }): Promise<Origin> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ORIGIN, ...(tls ? [tls.cert, tls.key] : [])],
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

/** CPU time (user + system) of a process so far, in ms; NaN without a readable `/proc`. */
function cpuMs(pid: number | "self"): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks of 10 ms
  } catch {
    return NaN;
  }
}

/** One download's speed and the CPU each party spent on it. */
interface Sample {
  mbps: number;
  origin: number;
  curl: number;
  proxy: number;
}

/**
 * curl downloads `url` (with `args`) to nothing; its speed, and the CPU the origin, curl and
 * this process spent. Throws unless exactly `bytes` arrived.
 */
async function download(
  url: string,
  args: string[],
  origin: Origin,
  bytes: number,
): Promise<Sample> {
  const curl = ["curl", "-sS", "-o", "/dev/null", "-w", "'%{size_download} %{speed_download}\\n'"]
    .concat("--noproxy", "''", ...args.map((a) => `'${a}'`), `'${url}'`).join(" ");
  const o0 = cpuMs(origin.child.pid);
  const p0 = cpuMs("self");
  // bash's `times` gives the CPU of its finished children: curl's.
  const out = await new Deno.Command("bash", {
    args: ["-c", `${curl} && times`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const p1 = cpuMs("self");
  const o1 = cpuMs(origin.child.pid);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  if (!out.success) {
    throw new Error(`curl failed for ${url}: ${new TextDecoder().decode(out.stderr)}`);
  }
  const [size, speed] = lines[0].split(" ").map(Number);
  if (size !== bytes) throw new Error(`${url}: ${size} bytes arrived, not ${bytes}`);
  const t = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s/.exec(lines[2] ?? "");
  const curlMs = t
    ? (Number(t[1]) * 60 + Number(t[2]) + Number(t[3]) * 60 + Number(t[4])) * 1e3
    : NaN;
  return { mbps: speed / 1e6, origin: o1 - o0, curl: curlMs, proxy: p1 - p0 };
}

async function small(originPort: number, proxyPort?: number) {
  const args = ["run", "-A", CLIENT, String(SMALL_N), String(originPort)];
  if (proxyPort) args.push(String(proxyPort));
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "piped" }).output();
  if (!out.success) throw new Error("the small-request client failed");
  return JSON.parse(new TextDecoder().decode(out.stdout)) as { p50Ms: number; rps: number };
}

/** A download path: its name, its baseline's name (none for a baseline) and how it is made. */
interface Path {
  name: string;
  baseline?: string;
  run: () => Promise<Sample>;
}

/** The machine's load (1-minute average), to say how shared it was; "n/a" without `/proc`. */
function load(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ")[0];
  } catch {
    return "n/a";
  }
}

const fmt = (n: number, digits = 0) => Number.isFinite(n) ? n.toFixed(digits) : "n/a";

/** Run the benchmark and print the result; returns each proxied path's ratio. */
export async function main(args: string[] = Deno.args): Promise<Record<string, number>> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: "string", default: "7" },
      mb: { type: "string", default: "256" },
      pace: { type: "string", default: "200" },
    },
  });
  const rounds = Number(values.rounds);
  const mb = Number(values.mb);
  const pace = Number(values.pace);
  if (!(rounds >= 1) || !(mb >= 1) || !(pace > 0)) {
    throw new Error("--rounds, --mb and --pace must be positive numbers");
  }
  const bytes = mb * 1024 * 1024;
  const dir = await Deno.makeTempDir({ prefix: "sandbar-bench-network-" });
  const originCa = await EgressCa.create("bench origin");
  const leaf = await originCa.leaf(TLS_HOST);
  await Deno.writeTextFile(`${dir}/origin-ca.pem`, originCa.certPem);
  await Deno.writeTextFile(`${dir}/cert.pem`, leaf.cert);
  await Deno.writeTextFile(`${dir}/key.pem`, leaf.key);
  const sandboxCa = await EgressCa.create("bench sandbox");
  await Deno.writeTextFile(`${dir}/sandbox-ca.pem`, sandboxCa.certPem);

  const plain = await startOrigin();
  const tls = await startOrigin({ cert: `${dir}/cert.pem`, key: `${dir}/key.pem` });
  const audit: AuditEntry[] = [];
  const keep = (e: AuditEntry) => audit.length < 100_000 && audit.push(e);
  const hosts = { [TLS_HOST]: "127.0.0.2" };
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "bench",
    rules: NetworkRules.compile({ allow: ["127.0.0.2", TLS_HOST], hosts }),
    audit: keep,
  });
  const intercepting = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "bench",
    rules: NetworkRules.compile({
      allow: [TLS_HOST],
      hosts,
      secrets: [{ host: TLS_HOST, env: "TOKEN", value: "bench-secret", placeholder: PLACEHOLDER }],
      ca: [originCa.certPem],
    }),
    audit: keep,
    ca: sandboxCa,
  });
  const via = `http://127.0.0.1:${proxy.port}`;
  const big = (port: number) => `http://127.0.0.2:${port}/big?mb=${mb}`;
  const secure = `https://${TLS_HOST}:${tls.port}/big?mb=${mb}`;
  const tlsArgs = ["--http1.1", "-H", `Authorization: Bearer ${PLACEHOLDER}`];
  const paced = `${big(plain.port)}&pace=${pace}`;
  const paths: Path[] = [
    { name: "direct", run: () => download(big(plain.port), [], plain, bytes) },
    {
      name: "plain HTTP forward (-x)",
      baseline: "direct",
      run: () => download(big(plain.port), ["-x", via], plain, bytes),
    },
    {
      name: "CONNECT tunnel (-p -x)",
      baseline: "direct",
      run: () => download(big(plain.port), ["-p", "-x", via], plain, bytes),
    },
    {
      name: "SOCKS5 (--socks5-hostname)",
      baseline: "direct",
      run: () =>
        download(big(plain.port), ["--socks5-hostname", `127.0.0.1:${proxy.port}`], plain, bytes),
    },
    {
      name: "direct TLS",
      run: () =>
        download(
          secure,
          [
            ...tlsArgs,
            "--resolve",
            `${TLS_HOST}:${tls.port}:127.0.0.2`,
            "--cacert",
            `${dir}/origin-ca.pem`,
          ],
          tls,
          bytes,
        ),
    },
    {
      name: "CONNECT, TLS end to end",
      baseline: "direct TLS",
      run: () =>
        download(secure, [...tlsArgs, "-x", via, "--cacert", `${dir}/origin-ca.pem`], tls, bytes),
    },
    {
      name: "CONNECT, TLS intercepted (secret)",
      baseline: "direct TLS",
      run: () =>
        download(
          secure,
          [
            ...tlsArgs,
            "-x",
            `http://127.0.0.1:${intercepting.port}`,
            "--cacert",
            `${dir}/sandbox-ca.pem`,
          ],
          tls,
          bytes,
        ),
    },
    { name: `direct, paced ${pace} MB/s`, run: () => download(paced, [], plain, bytes) },
    {
      name: `plain HTTP forward, paced ${pace} MB/s`,
      baseline: `direct, paced ${pace} MB/s`,
      run: () => download(paced, ["-x", via], plain, bytes),
    },
  ];
  const loadBefore = load();
  const samples = new Map<string, Sample[]>(paths.map((p) => [p.name, []]));
  const small_ = {
    rpsDirect: [] as number[],
    rpsProxy: [] as number[],
    p50Direct: [] as number[],
    p50Proxy: [] as number[],
  };
  try {
    for (const p of paths) await p.run(); // warm up every path once
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < paths.length; k++) {
        const p = paths[(i + k) % paths.length];
        samples.get(p.name)!.push(await p.run());
      }
      const d = await small(plain.port);
      const q = await small(plain.port, proxy.port);
      small_.rpsDirect.push(d.rps);
      small_.rpsProxy.push(q.rps);
      small_.p50Direct.push(d.p50Ms);
      small_.p50Proxy.push(q.p50Ms);
    }
  } finally {
    await proxy.close();
    await intercepting.close();
    for (const o of [plain, tls]) {
      o.child.kill();
      await o.child.status;
    }
  }

  const sandbox = await insideSandbox(rounds, mb, bytes);
  await Deno.remove(dir, { recursive: true });

  const ratios: Record<string, number> = {};
  const gib = bytes / 2 ** 30;
  console.log(
    `large download (${mb} MiB, curl), ${rounds} rounds, paths interleaved (order turned each ` +
      `round); load average ${loadBefore} before, ${load()} after on ${navigator.hardwareConcurrency} ` +
      "cores: a shared machine is noisy, read the ratios",
  );
  console.log(
    "  path                                   MB/s  ratio (of medians / median per round)" +
      "   CPU ms per GiB: origin  curl  proxy",
  );
  for (const p of paths) {
    const s = samples.get(p.name)!;
    const mbps = median(s.map((x) => x.mbps));
    let ratio = "";
    if (p.baseline) {
      const base = samples.get(p.baseline)!;
      const ofMedians = mbps / median(base.map((x) => x.mbps));
      const perRound = median(s.map((x, i) => x.mbps / base[i].mbps));
      ratios[p.name] = perRound;
      // Rounded down, so that a ratio shown as 0.80 has met the goal.
      const down = (x: number) => fmt(Math.floor(x * 100) / 100, 2);
      ratio = `${down(ofMedians)} / ${down(perRound)} ${perRound >= GOAL ? "met" : "NOT met"}`;
    }
    const cpu = (k: keyof Sample) => fmt(median(s.map((x) => x[k] / gib)));
    console.log(
      `  ${p.name.padEnd(38)} ${fmt(mbps).padStart(5)}  ${ratio.padEnd(38)} ${
        cpu("origin").padStart(16)
      } ${cpu("curl").padStart(5)} ${cpu("proxy").padStart(6)}`,
    );
  }
  const d = samples.get("direct")!;
  const f = samples.get("plain HTTP forward (-x)")!;
  const direct = median(d.map((x) => x.origin + x.curl));
  const proxied = median(f.map((x) => x.origin + x.curl + x.proxy));
  console.log(
    `  goal: each proxied path ≥ ${GOAL} of its baseline. CPU bound (all cores busy): ` +
      `(origin + curl) / (origin + curl + proxy) = ${fmt(direct / proxied, 2)} for plain HTTP`,
  );
  const m = Object.fromEntries(Object.entries(small_).map(([k, v]) => [k, median(v)]));
  const added = m.p50Proxy - m.p50Direct;
  console.log(
    `small requests (${SMALL_N} on new connections, one at a time), median of ${rounds}:`,
  );
  console.log(`  direct ${fmt(m.rpsDirect)} req/s (p50 ${fmt(m.p50Direct, 2)} ms)`);
  console.log(`  through the proxy ${fmt(m.rpsProxy)} req/s (p50 ${fmt(m.p50Proxy, 2)} ms)`);
  console.log(
    `  added per connection at p50: ${fmt(added, 2)} ms (goal < 2 ms): ${
      added < 2 ? "met" : "NOT met"
    }`,
  );
  console.log(`  (${audit.length} audit lines written)`);
  if (sandbox) {
    const perRound = median(sandbox.inside.map((x, i) => x / sandbox.direct[i]));
    console.log(
      `large download from inside a local sandbox (bridge, socket, proxy), ${rounds} rounds: ` +
        `${fmt(median(sandbox.inside))} MB/s against ${
          fmt(median(sandbox.direct))
        } MB/s direct from the host, median per-round ratio ${fmt(perRound, 2)}`,
    );
    ratios["inside a local sandbox"] = perRound;
  } else {
    console.log("inside a local sandbox: skipped (no bubblewrap)");
  }
  return ratios;
}

/** Downloads from inside a local sandbox and straight from the host, interleaved. */
async function insideSandbox(rounds: number, mb: number, bytes: number) {
  if (!findBwrap()) return null;
  const origin = await startOrigin();
  const url = `http://127.0.0.2:${origin.port}/big?mb=${mb}`;
  const inside: number[] = [];
  const direct: number[] = [];
  try {
    await using sandbox = await Sandbox.create({ network: { allow: ["127.0.0.2"] } });
    const run = async () => {
      const out = await sandbox.commands.run(
        `curl -sS -o /dev/null -w '%{size_download} %{speed_download}' ${url}`,
        { timeout: 120 },
      );
      const [size, speed] = out.stdout.split(" ").map(Number);
      if (size !== bytes) throw new Error(`inside the sandbox ${size} bytes arrived, not ${bytes}`);
      return speed / 1e6;
    };
    await run();
    for (let i = 0; i < rounds; i++) {
      direct.push((await download(url, [], origin, bytes)).mbps);
      inside.push(await run());
    }
  } finally {
    origin.child.kill();
    await origin.child.status;
  }
  return { inside, direct };
}

if (import.meta.main) await main();
