/**
 * Navigate plus screenshot through the real server (HTTP, the pipeline, the URL guard on every
 * request, the context's guard proxy, puppeteer, Chromium) against the same two calls made
 * with puppeteer-core directly in this process on a Chromium with the same required flags and
 * no guard, in the same run, interleaved so both see the same machine. The page is served on
 * loopback by this script: HTML with a stylesheet, a script and an image (four requests).
 * Prints the p50 and p90 of each and the p50 ratio (goal: at most 1.15).
 *
 * With `--libraries`, it measures instead what chose the library (`docs/server/browser.md`):
 * puppeteer-core against playwright-core on the same Chromium and page, both intercepting every
 * request as the server does: launch and close (p50 of 5), navigate, navigate plus screenshot,
 * and evaluate (p50 of the runs, interleaved).
 *
 * `deno run -A scripts/bench/browser.ts [--runs 30] [--libraries]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";
import { findChromium, REQUIRED_FLAGS } from "../../server/browser/chromium.ts";
import { startTestServer } from "../../tests/helpers/server.ts";

const WARMUP = 5;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const PAGE = `<!doctype html><html><head><title>Bench</title><link rel="stylesheet" href="/s.css">
<script src="/a.js"></script></head><body><h1>Benchmark page</h1>
${
  "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>".repeat(
    30,
  )
}
<img src="/i.svg" width="200" height="100"></body></html>`;
const FILES: Record<string, [string, string]> = {
  "/": [PAGE, "text/html; charset=utf-8"],
  "/s.css": ["body{font:16px sans-serif;margin:2em} h1{color:#036}", "text/css"],
  "/a.js": ["document.documentElement.dataset.ready = '1';", "text/javascript"],
  "/i.svg": [
    `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">` +
    `<rect width="200" height="100" fill="#f80"/></svg>`,
    "image/svg+xml",
  ],
};

function serveSite(signal: AbortSignal) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, signal, onListen() {} }, (req) => {
    const file = FILES[new URL(req.url).pathname];
    if (!file) return new Response("not found", { status: 404 });
    return new Response(file[0], { headers: { "content-type": file[1] } });
  });
}

/** puppeteer's launch options for the baseline: the required flags only, no guard. */
function directLaunchOptions(executablePath: string, profile: string) {
  return {
    executablePath,
    args: [...REQUIRED_FLAGS, `--user-data-dir=${profile}`],
    ignoreDefaultArgs: true,
    pipe: true,
    defaultViewport: null,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  };
}

/** Run the benchmark; returns the p50 ratio. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { runs: { type: "string", default: "30" }, libraries: { type: "boolean" } },
  });
  const runs = Number(values.runs);
  const executablePath = findChromium(Deno.env.toObject());
  if (!executablePath) throw new Error("Chromium not found (install the Debian package chromium)");
  const abort = new AbortController();
  const site = serveSite(abort.signal);
  const pageUrl = `http://127.0.0.1:${site.addr.port}/`;
  if (values.libraries) {
    try {
      await compareLibraries(executablePath, pageUrl, runs);
      return 0;
    } finally {
      abort.abort();
      await site.finished;
    }
  }
  const profile = await Deno.makeTempDir({ prefix: "sandbar-bench-browser-" });
  const browser = await puppeteer.launch(directLaunchOptions(executablePath, profile));
  try {
    await using server = await startTestServer({
      policy: { endpoints: { browser: true }, url_allow: ["http://127.0.0.1:*"] },
    });
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 720 });
    const direct = async () => {
      const res = await page.goto(pageUrl, { waitUntil: "load" });
      if (res?.status() !== 200) throw new Error("direct navigation failed");
      const png = await page.screenshot({ type: "png" });
      if (png.byteLength < 1000) throw new Error("direct screenshot too small");
    };
    const json = { "content-type": "application/json" };
    const navigateBody = JSON.stringify({ url: pageUrl, wait_until: "load" });
    const viaServer = async () => {
      const nav = await server.fetch("/browser/navigate", {
        method: "POST",
        body: navigateBody,
        headers: json,
      });
      const result = await nav.json();
      if (nav.status !== 200 || result.status !== 200) {
        throw new Error(`navigate failed: ${JSON.stringify(result)}`);
      }
      const shot = await server.fetch("/browser/screenshot", {
        method: "POST",
        body: "{}",
        headers: json,
      });
      const png = await shot.bytes();
      if (shot.status !== 200 || png.byteLength < 1000) throw new Error("screenshot failed");
    };
    for (let i = 0; i < WARMUP; i++) {
      await viaServer();
      await direct();
    }
    const serverTimes: number[] = [];
    const directTimes: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Which goes first changes each round at random: whatever Chromium still does after a
      // screenshot (raster, GC) must not always land on the same neighbour.
      const round: [() => Promise<void>, number[]][] = [
        [viaServer, serverTimes],
        [direct, directTimes],
      ];
      if (Math.random() < 0.5) round.reverse();
      for (const [run, times] of round) times.push(await timed(run));
    }
    const p50 = (v: number[]) => percentile(v, 0.5);
    const p90 = (v: number[]) => percentile(v, 0.9);
    console.log(`runs: ${runs} each, interleaved, after ${WARMUP} warm-up rounds`);
    console.log(
      `navigate+screenshot via server    p50 ${fmt(p50(serverTimes))}  p90 ${
        fmt(p90(serverTimes))
      }`,
    );
    console.log(
      `navigate+screenshot via puppeteer p50 ${fmt(p50(directTimes))}  p90 ${
        fmt(p90(directTimes))
      }`,
    );
    const ratio = p50(serverTimes) / p50(directTimes);
    console.log(`ratio (server / direct, p50): ${ratio.toFixed(3)} (goal <= 1.15)`);
    return ratio;
  } finally {
    await browser.close();
    await Deno.remove(profile, { recursive: true }).catch(() => {});
    abort.abort();
    await site.finished;
  }
}

const fmt = (n: number) => `${n.toFixed(1)} ms`;

/** puppeteer-core against playwright-core: the measurement behind the library choice. */
async function compareLibraries(executablePath: string, pageUrl: string, runs: number) {
  const { chromium } = await import("playwright-core");
  const p50 = (v: number[]) => percentile(v, 0.5);
  const dir = await Deno.makeTempDir({ prefix: "sandbar-bench-libraries-" });
  const launch = { pptr: [] as number[], pw: [] as number[] };
  const close = { pptr: [] as number[], pw: [] as number[] };
  const pptrOptions = (profile: string) => directLaunchOptions(executablePath, profile);
  // playwright refuses --user-data-dir with launch() (only its persistent context takes one).
  const pwOptions = { executablePath, args: [...REQUIRED_FLAGS] };
  try {
    for (let i = 0; i < 5; i++) {
      let t0 = performance.now();
      const b = await puppeteer.launch(pptrOptions(`${dir}/launch-${i}`));
      launch.pptr.push(performance.now() - t0);
      t0 = performance.now();
      await b.close();
      close.pptr.push(performance.now() - t0);
      t0 = performance.now();
      const w = await chromium.launch(pwOptions);
      launch.pw.push(performance.now() - t0);
      t0 = performance.now();
      await w.close();
      close.pw.push(performance.now() - t0);
    }
    const pb = await puppeteer.launch(pptrOptions(`${dir}/main`));
    const wb = await chromium.launch(pwOptions);
    try {
      const pp = await (await pb.createBrowserContext()).newPage();
      await pp.setViewport({ width: 1280, height: 720 });
      await pp.setRequestInterception(true);
      pp.on("request", (r) => void r.continue());
      const wctx = await wb.newContext({ viewport: { width: 1280, height: 720 } });
      await wctx.route("**/*", (r) => r.continue());
      const wp = await wctx.newPage();
      const t = {
        pptrNav: [] as number[],
        pwNav: [] as number[],
        pptrShot: [] as number[],
        pwShot: [] as number[],
        pptrEval: [] as number[],
        pwEval: [] as number[],
      };
      for (let i = 0; i < runs + WARMUP; i++) {
        const keep = i >= WARMUP;
        let t0 = performance.now();
        await pp.goto(pageUrl);
        const pptrNav = performance.now() - t0;
        await pp.screenshot({ type: "png" });
        const pptrShot = performance.now() - t0;
        t0 = performance.now();
        await pp.evaluate("document.title");
        const pptrEval = performance.now() - t0;
        t0 = performance.now();
        await wp.goto(pageUrl);
        const pwNav = performance.now() - t0;
        await wp.screenshot({ type: "png" });
        const pwShot = performance.now() - t0;
        t0 = performance.now();
        await wp.evaluate("document.title");
        const pwEval = performance.now() - t0;
        if (!keep) continue;
        t.pptrNav.push(pptrNav);
        t.pptrShot.push(pptrShot);
        t.pptrEval.push(pptrEval);
        t.pwNav.push(pwNav);
        t.pwShot.push(pwShot);
        t.pwEval.push(pwEval);
      }
      const row = (name: string, a: number[], b: number[]) =>
        console.log(`${name.padEnd(28)} ${fmt(p50(a)).padStart(10)} ${fmt(p50(b)).padStart(10)}`);
      console.log(`p50; launch and close over 5, the rest over ${runs}, interleaved`);
      console.log(`${"".padEnd(28)} ${"puppeteer".padStart(10)} ${"playwright".padStart(10)}`);
      row("launch", launch.pptr, launch.pw);
      row("close", close.pptr, close.pw);
      row("navigate (load)", t.pptrNav, t.pwNav);
      row("navigate + screenshot", t.pptrShot, t.pwShot);
      row("evaluate", t.pptrEval, t.pwEval);
    } finally {
      await pb.close();
      await wb.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main();
