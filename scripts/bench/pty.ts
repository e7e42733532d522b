/**
 * Terminals: keystroke echo latency (p50, p99) and the throughput of 100 MiB of output, each
 * measured the same way in the same run through
 *
 * - `shim`: the FFI shim alone (`server/pty/terminal.ts` + `terminal_program.ts`), in this process;
 * - `websocket`: the real server (launched like `deno task start`, narrowed permissions) over
 *   its PTY WebSocket, from this process as the client;
 * - `node-pty`: `@lydell/node-pty` under Node (installed into `.tmp/bench-pty` at run time);
 * - `pipe` (throughput only): the same command's output through a plain pipe, no terminal;
 * - `script(1)` (throughput only): util-linux `script`, a C poll loop on a pty, writing to
 *   /dev/null: the kernel's own pty ceiling on this machine, for scale.
 *
 * Echo: bash (readline) with no rc files; a key is sent and the clock stops when its echo comes
 * back; keys alternate `x` and Backspace so the line never grows. Throughput: `sh -c 'read go;
 * yes <70 digits> | head -c 100MiB'`, timed from the Enter that releases it to the shell's
 * exit with every byte received (the terminal's `\n` -> `\r\n` makes it ~1.4% more bytes).
 * Rounds are interleaved so drift on a noisy machine hits every variant alike; medians are
 * printed with the ratios.
 *
 * `deno run -A scripts/bench/pty.ts [--keys 400] [--mib 100] [--rounds 3]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { spawnOnTerminal } from "../../server/pty/terminal_program.ts";
import { PseudoTerminal } from "../../server/pty/terminal.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const nodeScript = fileURLToPath(new URL("./pty/node_pty.mjs", import.meta.url));
const nodeDir = `${root}.tmp/bench-pty`;
const NODE_PTY = "@lydell/node-pty@1.1.0";
const TOKEN = "bench-token-0123456789abcdef";
const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", TERM: "xterm-256color", PS1: "$ " };
const BASH = ["--norc", "--noprofile"];
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const throughputScript = (bytes: number) =>
  `read go; yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -c ${bytes}`;

/** A byte sink that resolves waiters when what they wait for has arrived. */
class Arrivals {
  text = "";
  bytes = 0;
  #waiter: { test: () => boolean; resolve: () => void } | undefined;

  push(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.#waiter) {
      this.text += decoder.decode(chunk);
      if (this.#waiter.test()) {
        const w = this.#waiter;
        this.#waiter = undefined;
        w.resolve();
      }
    }
  }

  /** Resolve once `text` (reset now) contains `s`. */
  expect(s: string): Promise<void> {
    this.text = "";
    const done = Promise.withResolvers<void>();
    this.#waiter = { test: () => this.text.includes(s), resolve: done.resolve };
    return done.promise;
  }
}

/** Alternate `x` and Backspace `n` times; the milliseconds from each key to its echo. */
async function typeKeys(n: number, send: (key: Uint8Array) => void, sink: Arrivals) {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = i % 2 === 0 ? "x" : "\x7f";
    const echoed = sink.expect(i % 2 === 0 ? "x" : "\b");
    const t0 = performance.now();
    send(encoder.encode(key));
    await echoed;
    samples.push(performance.now() - t0);
  }
  return samples;
}

async function shimEcho(n: number): Promise<number[]> {
  const sink = new Arrivals();
  const term = PseudoTerminal.open({ cols: 80, rows: 24 }, (b) => sink.push(b));
  const child = spawnOnTerminal({
    tty: term.path,
    program: "/bin/bash",
    args: BASH,
    cwd: root,
    env: ENV,
  });
  try {
    await sink.expect("$ ");
    return await typeKeys(n, (k) => term.write(k), sink);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await term.close();
  }
}

async function shimThroughput(bytes: number): Promise<{ bytes: number; ms: number }> {
  const sink = new Arrivals();
  const term = PseudoTerminal.open({ cols: 80, rows: 24 }, (b) => sink.push(b));
  const child = spawnOnTerminal({
    tty: term.path,
    program: "/bin/sh",
    args: ["-c", throughputScript(bytes)],
    cwd: root,
    env: ENV,
  });
  await new Promise((r) => setTimeout(r, 100)); // let sh reach `read`
  sink.bytes = 0;
  const t0 = performance.now();
  term.write(encoder.encode("\r"));
  await child.status;
  await term.close(); // reads what is still buffered in the terminal
  return { bytes: sink.bytes - 2, ms: performance.now() - t0 }; // less the echoed "\r\n"
}

async function pipeThroughput(bytes: number): Promise<{ bytes: number; ms: number }> {
  const t0 = performance.now();
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", throughputScript(bytes).replace("read go; ", "")],
    stdout: "piped",
    stdin: "null",
  }).spawn();
  let got = 0;
  for await (const chunk of child.stdout) got += chunk.length;
  await child.status;
  return { bytes: got, ms: performance.now() - t0 };
}

async function scriptThroughput(bytes: number): Promise<{ bytes: number; ms: number }> {
  const t0 = performance.now();
  const out = await new Deno.Command("script", {
    args: ["-q", "-c", throughputScript(bytes).replace("read go; ", ""), "/dev/null"],
    stdout: "null",
    stdin: "null",
  }).output();
  if (!out.success) throw new Error("script(1) failed");
  return { bytes, ms: performance.now() - t0 };
}

/** The real server, started as `deno task start` would, on free ports. */
class Server {
  url = "";
  ptyUrl = "";
  #child: Deno.ChildProcess | undefined;
  #root = "";

  async start(): Promise<void> {
    this.#root = await Deno.makeTempDir({ prefix: "sandbar-bench-pty-" });
    this.#child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${root}server/main.ts`,
        "--port",
        "0",
        "--pty-port",
        "0",
        "--root",
        this.#root,
      ],
      env: { SVC_SERVER_TOKEN: TOKEN },
      stdout: "piped",
      stderr: "null",
      stdin: "null",
    }).spawn();
    const reader = this.#child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the server exited before listening");
      out += value;
    }
    const ready = JSON.parse(out.split("\n")[0]);
    this.url = ready.url;
    this.ptyUrl = ready.pty_url;
    (async () => {
      while (!(await reader.read()).done) { /* drain */ }
    })();
  }

  async create(body: Record<string, unknown>): Promise<string> {
    const res = await fetch(`${this.url}/pty`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = await res.json();
    if (res.status !== 201) throw new Error(JSON.stringify(json));
    return json.id;
  }

  /** Connect; resolves once `ready` and the replay are in. */
  async connect(id: string, sink: Arrivals, onExit: () => void): Promise<WebSocket> {
    const ws = new WebSocket(`${this.ptyUrl}/pty/${id}/connect`, [
      "sandbar.pty.v1",
      `sandbar.bearer.${TOKEN}`,
    ]);
    ws.binaryType = "arraybuffer";
    const ready = Promise.withResolvers<void>();
    ws.onmessage = (e) => {
      if (typeof e.data === "string") {
        const msg = JSON.parse(e.data);
        if (msg.type === "ready") ready.resolve();
        if (msg.type === "exit") onExit();
      } else sink.push(new Uint8Array(e.data));
    };
    ws.onerror = () => ready.reject(new Error("WebSocket failed"));
    await ready.promise;
    return ws;
  }

  async remove(id: string): Promise<void> {
    const res = await fetch(`${this.url}/pty/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    await res.body?.cancel();
  }

  async stop(): Promise<void> {
    this.#child?.kill("SIGTERM");
    await this.#child?.status;
    await Deno.remove(this.#root, { recursive: true }).catch(() => {});
  }
}

async function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return;
  const closed = new Promise((r) => ws.addEventListener("close", r));
  ws.close();
  await closed;
}

async function wsEcho(server: Server, n: number): Promise<number[]> {
  const id = await server.create({ shell: "/bin/bash", args: BASH, env: { PS1: "$ " } });
  const sink = new Arrivals();
  const prompt = sink.expect("$ ");
  const ws = await server.connect(id, sink, () => {});
  try {
    await prompt;
    return await typeKeys(n, (k) => ws.send(k), sink);
  } finally {
    await closeSocket(ws);
    await server.remove(id);
  }
}

async function wsThroughput(server: Server, bytes: number): Promise<{ bytes: number; ms: number }> {
  const id = await server.create({ shell: "/bin/sh", args: ["-c", throughputScript(bytes)] });
  const sink = new Arrivals();
  const exited = Promise.withResolvers<void>();
  const ws = await server.connect(id, sink, exited.resolve);
  await new Promise((r) => setTimeout(r, 100));
  sink.bytes = 0;
  const t0 = performance.now();
  ws.send(encoder.encode("\r"));
  await exited.promise;
  const ms = performance.now() - t0;
  await closeSocket(ws);
  await server.remove(id);
  return { bytes: sink.bytes - 2, ms };
}

async function runNode(args: string[]): Promise<Record<string, unknown>> {
  const out = await new Deno.Command("node", {
    args: [nodeScript, ...args],
    env: { BENCH_NODE_MODULES: `${nodeDir}/node_modules` },
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`node ${args.join(" ")} failed`);
  return JSON.parse(decoder.decode(out.stdout));
}

/** Install node-pty; the reason it cannot run here, or undefined when it can. */
async function prepareNodePty(): Promise<string | undefined> {
  try {
    const install = await new Deno.Command("npm", {
      args: ["install", "--silent", "--no-audit", "--no-fund", "--prefix", nodeDir, NODE_PTY],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!install.success) {
      return `npm install ${NODE_PTY} failed: ${decoder.decode(install.stderr)}`;
    }
    const probe = await runNode(["echo", "2"]);
    if (!Array.isArray(probe.samples_ms)) return "node-pty did not echo";
    return undefined;
  } catch (e) {
    return `node-pty unavailable: ${(e as Error).message}`;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Runs the bench and prints the table; returns the medians. */
export async function main(argv: string[] = Deno.args): Promise<Record<string, number>> {
  const { values } = parseArgs({
    args: argv,
    options: { keys: { type: "string" }, mib: { type: "string" }, rounds: { type: "string" } },
  });
  const keys = Number(values.keys ?? 400);
  const bytes = Number(values.mib ?? 100) * 1024 * 1024;
  const rounds = Number(values.rounds ?? 3);
  const nodeProblem = await prepareNodePty();
  if (nodeProblem) console.log(`node-pty: NOT MEASURED: ${nodeProblem}`);
  const server = new Server();
  await server.start();
  const echo: Record<string, number[]> = { shim: [], websocket: [], "node-pty": [] };
  const rate: Record<string, number[]> = {
    pipe: [],
    "script(1)": [],
    shim: [],
    websocket: [],
    "node-pty": [],
  };
  const addRate = (k: string, r: { bytes: number; ms: number }) => {
    if (r.bytes < bytes) throw new Error(`${k}: got ${r.bytes} of ${bytes} bytes`);
    rate[k].push(r.bytes / 1024 / 1024 / (r.ms / 1000));
  };
  try {
    for (let round = 1; round <= rounds; round++) {
      echo.shim.push(...await shimEcho(keys));
      echo.websocket.push(...await wsEcho(server, keys));
      if (!nodeProblem) {
        echo["node-pty"].push(...(await runNode(["echo", String(keys)])).samples_ms as number[]);
      }
      addRate("pipe", await pipeThroughput(bytes));
      addRate("script(1)", await scriptThroughput(bytes));
      addRate("shim", await shimThroughput(bytes));
      addRate("websocket", await wsThroughput(server, bytes));
      if (!nodeProblem) {
        addRate("node-pty", (await runNode(["throughput", String(bytes)])) as never);
      }
      console.error(`round ${round}/${rounds} done`);
    }
  } finally {
    await server.stop();
  }
  const result: Record<string, number> = {};
  console.log(`keystroke echo latency, ms (${keys} keys x ${rounds} rounds; bash readline)`);
  for (const [k, xs] of Object.entries(echo)) {
    if (xs.length === 0) continue;
    result[`echo_p50_${k}`] = percentile(xs, 50);
    result[`echo_p99_${k}`] = percentile(xs, 99);
    console.log(
      `  ${k.padEnd(10)} p50 ${percentile(xs, 50).toFixed(3)}   p99 ${
        percentile(xs, 99).toFixed(3)
      }`,
    );
  }
  console.log(`throughput of ${bytes / 1024 / 1024} MiB of output, MiB/s (median of ${rounds})`);
  for (const [k, xs] of Object.entries(rate)) {
    if (xs.length === 0) continue;
    result[`mibps_${k}`] = median(xs);
    console.log(
      `  ${k.padEnd(10)} ${median(xs).toFixed(1).padStart(7)}   (${
        xs.map((x) => x.toFixed(0)).join(" · ")
      })`,
    );
  }
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : "n/a");
  console.log("ratios");
  console.log(
    `  echo p50: websocket / shim       ${ratio(result.echo_p50_websocket, result.echo_p50_shim)}`,
  );
  console.log(
    `  echo p99: websocket / shim       ${ratio(result.echo_p99_websocket, result.echo_p99_shim)}`,
  );
  console.log(`  throughput: shim / pipe          ${ratio(result.mibps_shim, result.mibps_pipe)}`);
  console.log(
    `  throughput: websocket / pipe     ${ratio(result.mibps_websocket, result.mibps_pipe)}`,
  );
  if (!nodeProblem) {
    console.log(
      `  echo p50: shim / node-pty        ${
        ratio(result.echo_p50_shim, result["echo_p50_node-pty"])
      }`,
    );
    console.log(
      `  echo p99: shim / node-pty        ${
        ratio(result.echo_p99_shim, result["echo_p99_node-pty"])
      }`,
    );
    console.log(
      `  echo p50: websocket / node-pty   ${
        ratio(result.echo_p50_websocket, result["echo_p50_node-pty"])
      }`,
    );
    console.log(
      `  throughput: shim / node-pty      ${ratio(result.mibps_shim, result["mibps_node-pty"])}`,
    );
    console.log(
      `  throughput: websocket / node-pty ${
        ratio(result.mibps_websocket, result["mibps_node-pty"])
      }`,
    );
  } else {
    console.log(`  node-pty ratios: not measured (${nodeProblem})`);
  }
  return result;
}

if (import.meta.main) await main();
