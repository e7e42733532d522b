/**
 * Benchmark: the agents store through the whole pipeline. In the same run and with the same
 * load generator (wrk, 50 connections, server on CPU 0, wrk on CPU 1): `GET /commands` (the
 * pipeline's cheapest authenticated route, the baseline), `GET /v1/agents` answering a page of
 * 20 agents, and `POST /v1/agents` creating one (SQLite in WAL mode, creates committed in
 * groups). Runs alternate, and each round's ratios to the baseline are taken, so drift on a
 * shared machine hits both sides alike; the medians of the ratios are the result.
 * Goals: list and create within 1.5x of `GET /commands` (ratio of throughput at least 0.67),
 * and at least 1,000 creates per second sustained.
 *
 * In the same rounds, the floors (`agents_bare_server.ts`): a bare `Deno.serve` answering the
 * very texts sandbar answered, to show what the list's answer size and a create's body read
 * cost with no sandbar code at all, and a bare insert with one commit per request.
 *
 * The caller is a tenant (`bench`, with `agents:read` and `agents:write` but not `agents:admin`),
 * and another tenant's 200 agents are in the table, newer than the caller's 20: the list answers
 * the caller's own page, filtered by owner, and each create records its owner. Before tenants
 * existed the same run listed the newest 20 of all 220 (the same page size).
 *
 * Run: `deno run -A scripts/bench/agents_store.ts` (needs `wrk`: `apt-get install wrk`).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { have, median, startPinned } from "./load.ts";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));
const BARE = fileURLToPath(new URL("./agents_bare_server.ts", import.meta.url));
const TOKEN = "bench-token-0123456789abcdef";
/** Another tenant, whose agents share the table. */
const OTHER_TOKEN = "other-token-0123456789abcdef";

/** One wrk run: requests per second and non-2xx answers. */
async function wrk(
  url: string,
  seconds: number,
  script?: string,
): Promise<{ rps: number; errors: number }> {
  const args = ["-t1", "-c50", `-d${seconds}s`, "-H", `authorization: Bearer ${TOKEN}`];
  if (script) args.push("-s", script);
  args.push(url);
  const argv = await have("taskset") ? ["taskset", "-c", "1", "wrk", ...args] : ["wrk", ...args];
  const out = await new Deno.Command(argv[0], { args: argv.slice(1), stdout: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN),
    errors: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0),
  };
}

/** Run the benchmark and print the result. */
export async function main(runs = 5, seconds = 3): Promise<{ list: number; create: number }> {
  if (!(await have("wrk"))) {
    console.log("agents_store: skipped, wrk is not installed (apt-get install wrk)");
    return { list: NaN, create: NaN };
  }
  const root = await Deno.makeTempDir({ prefix: "sandbar-bench-" });
  const dataDir = `${root}-data`;
  const policy = `${root}/policy.jsonc`;
  await Deno.writeTextFile(
    policy,
    JSON.stringify({
      audit: "deny",
      endpoints: { agents: true },
      identities: [
        { id: "bench", token: TOKEN, scopes: ["agents:read", "agents:write", "commands:read"] },
        { id: "other", token: OTHER_TOKEN, scopes: ["agents:read", "agents:write"] },
      ],
    }),
  );
  const post = `${root}/post.lua`;
  await Deno.writeTextFile(
    post,
    `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n` +
      `wrk.body = '{"model":"gpt-bench","name":"bench","instructions":"Be brief.","metadata":{"run":"bench"}}'\n`,
  );
  const server = await startPinned(
    [
      Deno.execPath(),
      "run",
      "-A",
      MAIN,
      ...["--port", "0", "--pty-port", "0", "--root", root, "--policy", policy],
      ...["--data-dir", dataDir],
    ],
    { SVC_SERVER_TOKEN: TOKEN },
  );
  const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const results = {
    commands: [] as number[],
    list: [] as number[],
    create: [] as number[],
    bareCommands: [] as number[],
    bareList: [] as number[],
    bareEcho: [] as number[],
    bareInsert: [] as number[],
    bareStore: [] as number[],
  };
  let listed = 0;
  let bare: Awaited<ReturnType<typeof startPinned>> | undefined;
  let createdText = "";
  try {
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${server.url}/v1/agents`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ model: "gpt-bench", name: `seed-${i}` }),
      });
      createdText = await res.text();
      if (!res.ok) throw new Error(`create answered ${res.status}: ${createdText}`);
    }
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${server.url}/v1/agents`, {
        method: "POST",
        headers: { ...auth, authorization: `Bearer ${OTHER_TOKEN}` },
        body: JSON.stringify({ model: "gpt-bench", name: `other-${i}` }),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`other's create answered ${res.status}: ${text}`);
    }
    const pageText = await (await fetch(`${server.url}/v1/agents?limit=20`, { headers: auth }))
      .text();
    listed = JSON.parse(pageText).data.length;
    const commandsText = await (await fetch(`${server.url}/commands`, { headers: auth })).text();
    await Deno.writeTextFile(`${root}/commands.json`, commandsText);
    await Deno.writeTextFile(`${root}/list.json`, pageText);
    await Deno.writeTextFile(`${root}/created.json`, createdText);
    bare = await startPinned([
      Deno.execPath(),
      "run",
      "-A",
      BARE,
      ...[`${root}/commands.json`, `${root}/list.json`, `${root}/created.json`, root],
    ]);
    // Warm both servers' every route (the JIT, the caches) before the measured rounds.
    await wrk(`${server.url}/commands`, 1);
    await wrk(`${server.url}/v1/agents?limit=20`, 1);
    await wrk(`${server.url}/v1/agents`, 1, post);
    for (const path of ["/commands", "/list"]) await wrk(`${bare.url}${path}`, 1);
    for (const path of ["/echo", "/insert", "/store"]) await wrk(`${bare.url}${path}`, 1, post);
    for (let i = 0; i < runs; i++) {
      const c = await wrk(`${server.url}/commands`, seconds);
      const l = await wrk(`${server.url}/v1/agents?limit=20`, seconds);
      const p = await wrk(`${server.url}/v1/agents`, seconds, post);
      const bc = await wrk(`${bare.url}/commands`, seconds);
      const bl = await wrk(`${bare.url}/list`, seconds);
      const be = await wrk(`${bare.url}/echo`, seconds, post);
      const bi = await wrk(`${bare.url}/insert`, seconds, post);
      const bs = await wrk(`${bare.url}/store`, seconds, post);
      const all = { commands: c, list: l, create: p, bc, bl, be, bi, bs };
      for (const [name, r] of Object.entries(all)) {
        if (r.errors > 0 || !(r.rps > 0)) throw new Error(`${name}: ${r.errors} non-2xx answers`);
      }
      results.commands.push(c.rps);
      results.list.push(l.rps);
      results.create.push(p.rps);
      results.bareCommands.push(bc.rps);
      results.bareList.push(bl.rps);
      results.bareEcho.push(be.rps);
      results.bareInsert.push(bi.rps);
      results.bareStore.push(bs.rps);
    }
  } finally {
    await bare?.stop();
    await server.stop();
    await Deno.remove(root, { recursive: true });
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
  const ratio = (xs: number[], base = results.commands) => median(xs.map((v, i) => v / base[i]));
  const list = ratio(results.list);
  const create = ratio(results.create);
  const bareBase = results.bareCommands;
  const fmt = (xs: number[]) => xs.map(Math.round).join(", ");
  console.log(
    `agents_store: through the full pipeline vs GET /commands (wrk, ${runs}x${seconds}s, 50 conns)`,
  );
  console.log(
    `  agents.list of ${listed}: median ${Math.round(median(results.list))} req/s  runs ${
      fmt(results.list)
    }`,
  );
  console.log(
    `  agents.create:  median ${Math.round(median(results.create))} req/s  runs ${
      fmt(results.create)
    }`,
  );
  console.log(
    `  GET /commands:  median ${Math.round(median(results.commands))} req/s  runs ${
      fmt(results.commands)
    }`,
  );
  console.log(`  ratio list/commands ${list.toFixed(2)} (goal >= 0.67, i.e. within 1.5x)`);
  console.log(`  ratio create/commands ${create.toFixed(2)} (goal >= 0.67, i.e. within 1.5x)`);
  console.log(`  creates/s sustained: median ${Math.round(median(results.create))} (goal >= 1000)`);
  console.log(
    `  floors, bare Deno.serve answering the same texts (GET /commands's text: median ${
      Math.round(median(bareBase))
    } req/s):`,
  );
  console.log(
    `    the list's text / the commands' text ${ratio(results.bareList, bareBase).toFixed(2)}`,
  );
  console.log(
    `    read a create's body, answer its text / the commands' text ${
      ratio(results.bareEcho, bareBase).toFixed(2)
    }`,
  );
  console.log(
    `    the same with one SQLite insert + commit per request ${
      ratio(results.bareInsert, bareBase).toFixed(2)
    } (${Math.round(median(results.bareInsert))} req/s)`,
  );
  console.log(
    `    the same through the agents store's group commit ${
      ratio(results.bareStore, bareBase).toFixed(2)
    } (${Math.round(median(results.bareStore))} req/s)`,
  );
  console.log(`    sandbar's GET /commands / bare ${ratio(results.commands, bareBase).toFixed(2)}`);
  return { list, create };
}

if (import.meta.main) await main();
