/**
 * `shell` of `true` through the real server (HTTP, the pipeline, the guards, a new process group)
 * against a bare `Deno.Command` spawn of `true` in this process, in the same run, interleaved (in
 * a new random order each round) so all see the same machine. Prints the p50 of each, the p90,
 * and the ratio (goal: at most 1.3).
 *
 * The server is asked through a keep-alive HTTP/1.1 connection ({@linkcode Http1Client}), as
 * `wrk` asks it in the throughput benches, so the client's own cost is not charged to the server.
 * The same request through Deno's `fetch` (what the SDK uses) is printed beside it.
 *
 * More rows show where the time goes: the server's own spawn path alone in this process (libc's
 * `posix_spawn` with `POSIX_SPAWN_SETSID` over FFI, its exit from `SIGCHLD` and its pipes read at
 * exit, no HTTP); a bare spawn of `setsid true` (what the `Deno.Command` fallback must start to make a
 * group leader); `bash -c true` (what a shell string costs without the fast path for plain
 * commands); and `GET /process` (the HTTP round trip and pipeline with no process at all).
 *
 * Last, a confinement's one-time set-up with the server's ports closed against file rules alone.
 *
 * Confinement: a second server with `SANDBAR_CONFINEMENT=off` answers the same `shell` of `true`
 * in the same rounds, so the cost of starting each process on a Landlock-confined spawner thread
 * (the hop to that thread and back) is printed as a ratio and a difference of p50s.
 *
 * `deno run -A scripts/bench/process.ts [--runs 400]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { landlockAbi } from "../../server/confine/landlock.ts";
import { planRules } from "../../server/confine/rules.ts";
import { Spawner } from "../../server/confine/spawner.ts";
import { NativeChild } from "../../server/process/native_child.ts";
import { nativeSpawnSupported } from "../../server/process/posix_spawn.ts";
import { startTestServer } from "../../tests/helpers/server.ts";
import { Http1Client } from "./http1_client.ts";

const WARMUP = 30;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

/** Run the benchmark; returns the p50 ratio of the server's `shell` to a bare spawn. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({ args, options: { runs: { type: "string", default: "400" } } });
  const runs = Number(values.runs);
  await using server = await startTestServer();
  using client = await Http1Client.connect(server.url, {
    authorization: `Bearer ${server.token}`,
  });
  await using open = await startTestServer({ env: { SANDBAR_CONFINEMENT: "off" } });
  using openClient = await Http1Client.connect(open.url, {
    authorization: `Bearer ${open.token}`,
  });
  const body = JSON.stringify({ cmd: "true" });
  const env = Deno.env.toObject();
  const bare = (program: string, args: string[]) => async () => {
    const out = await new Deno.Command(program, { args, stdout: "piped", stderr: "piped" })
      .output();
    if (!out.success) throw new Error(`${program} failed`);
  };
  const cases: [string, () => Promise<void>][] = [
    ['server shell "true"', async () => {
      const res = await client.request("POST", "/process/shell", body);
      const result = JSON.parse(res.text);
      if (result.exit_code !== 0) throw new Error(`shell failed: ${res.text}`);
    }],
    ["bare Deno.Command true", bare("true", [])],
    ['server shell "true" (unconfined)', async () => {
      const res = await openClient.request("POST", "/process/shell", body);
      if (JSON.parse(res.text).exit_code !== 0) throw new Error(`shell failed: ${res.text}`);
    }],
    ['server shell "true" (Deno fetch)', async () => {
      const res = await server.fetch("/process/shell", {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
      });
      const result = await res.json();
      if (result.exit_code !== 0) throw new Error(`shell failed: ${JSON.stringify(result)}`);
    }],
    ["bare Deno.Command setsid true", bare("setsid", ["true"])],
    ["bare Deno.Command bash -c true", bare("bash", ["-c", "true"])],
    ["server GET /process (no spawn)", async () => {
      const res = await client.request("GET", "/process");
      if (res.status !== 200) throw new Error(`GET /process: ${res.status}`);
    }],
  ];
  if (nativeSpawnSupported()) {
    cases.push(["FFI posix_spawn true (alone)", async () => {
      const child = new NativeChild({ argv: ["true"], cwd: "/", env, stdin: false }, () => {});
      const status = await child.status;
      await child.drained;
      if (status.code !== 0) throw new Error("true failed");
    }]);
  }
  // The same spawn on a Landlock-confined spawner thread, in this process: the hop's own cost.
  let spawner: Spawner | undefined;
  if (nativeSpawnSupported() && landlockAbi() > 0) {
    spawner = new Spawner(planRules({ readWrite: [Deno.cwd()], withheld: [], exec: null }));
    await spawner.ready;
    const confined = spawner;
    cases.push(["FFI posix_spawn true (confined thread)", async () => {
      const spec = { argv: ["true"], cwd: "/", env, stdin: false, spawner: confined };
      const child = new NativeChild(spec, () => {});
      const status = await child.status;
      await child.drained;
      if (status.code !== 0) throw new Error("true failed");
    }]);
  }
  const times = new Map(cases.map(([name]) => [name, [] as number[]]));
  for (let i = 0; i < WARMUP + runs; i++) {
    // A new order each round: whatever the server does after answering (GC, the audit line)
    // must not always land on the same neighbour.
    const order = [...cases].sort(() => Math.random() - 0.5);
    for (const [name, run] of order) {
      const t0 = performance.now();
      await run();
      if (i >= WARMUP) times.get(name)!.push(performance.now() - t0);
    }
  }
  const p50 = (name: string) => percentile(times.get(name)!, 0.5);
  const fmt = (n: number) => `${n.toFixed(3)} ms`;
  console.log(`runs: ${runs} each, interleaved, after ${WARMUP} warm-up rounds`);
  for (const [name, v] of times) {
    console.log(`${name.padEnd(34)} p50 ${fmt(p50(name))}  p90 ${fmt(percentile(v, 0.9))}`);
  }
  const baseline = p50("bare Deno.Command true");
  const ratio = p50('server shell "true"') / baseline;
  console.log(`ratio server shell / bare true (p50): ${ratio.toFixed(2)} (goal <= 1.3)`);
  const confined = p50('server shell "true"');
  const unconfined = p50('server shell "true" (unconfined)');
  console.log(
    `confinement: shell "true" confined / unconfined (p50): ${(confined / unconfined).toFixed(2)}` +
      `, ${fmt(confined - unconfined)} per process start (goal < 1 ms)`,
  );
  if (spawner) {
    spawner.close();
    const hop = p50("FFI posix_spawn true (confined thread)") - p50("FFI posix_spawn true (alone)");
    console.log(
      `confinement in this process: ${fmt(hop)} per spawn (confined thread - main thread)`,
    );
  }
  for (const [name] of cases.slice(2)) {
    console.log(`ratio ${name} / bare true (p50): ${(p50(name) / baseline).toFixed(2)}`);
  }
  if (spawner) await setUpCost();
  await afterIdle(cases[0][1], cases[1][1], p50('server shell "true"'));
  return ratio;
}

/**
 * `shell` of `true` after an idle spell (200 ms with nothing to do) against the bare spawn after
 * the same spell, alternated, and against `shell` back to back (`busy`, the p50 above): what a
 * command costs when it is not one of a stream. A move into a cgroup by pid after an idle spell
 * waits for an RCU grace period (`server/process/tree_cgroups.ts`); this bench's server, outside
 * a sandbox, puts its trees in a cgroup v2 hierarchy where there is one, and moves itself there
 * for each spawn (measured on the 2-core test machine: 11.1 ms after idle against 2.4 back to
 * back; 3.9 ms with cgroup2 mounted `favordynmods`).
 */
async function afterIdle(
  shell: () => Promise<void>,
  bare: () => Promise<void>,
  busy: number,
  rounds = 15,
): Promise<void> {
  const times = { shell: [] as number[], bare: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    for (const [kind, run] of [["shell", shell], ["bare", bare]] as const) {
      await new Promise((r) => setTimeout(r, 200));
      const t0 = performance.now();
      await run();
      times[kind].push(performance.now() - t0);
    }
  }
  const idleShell = percentile(times.shell, 0.5);
  const idleBare = percentile(times.bare, 0.5);
  console.log(
    `after 200 ms idle (p50 of ${rounds}): server shell "true" ${idleShell.toFixed(3)} ms, bare ` +
      `true ${idleBare.toFixed(3)} ms; ratio ${(idleShell / idleBare).toFixed(2)}, ` +
      `${(idleShell / busy).toFixed(2)}x the shell back to back`,
  );
}

/**
 * A confinement's one-time set-up, with the server's two ports closed to TCP `connect` (65,534
 * port rules) against the same file rules alone, alternated: what an identity's first process
 * waits for.
 */
async function setUpCost(rounds = 7): Promise<void> {
  const rules = planRules({ readWrite: [Deno.cwd()], withheld: [], exec: null });
  const times = { ports: [] as number[], files: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    for (const kind of ["ports", "files"] as const) {
      const t0 = performance.now();
      const s = new Spawner(rules, kind === "ports" ? [9000, 9001] : []);
      await s.ready;
      times[kind].push(performance.now() - t0);
      s.close();
    }
  }
  const withPorts = percentile(times.ports, 0.5);
  const filesOnly = percentile(times.files, 0.5);
  console.log(
    `confinement set-up, once per identity: ${withPorts.toFixed(1)} ms with the server's ports ` +
      `closed, ${filesOnly.toFixed(1)} ms with file rules alone (p50 of ${rounds}; ratio ` +
      `${(withPorts / filesOnly).toFixed(1)})`,
  );
}

if (import.meta.main) await main();
