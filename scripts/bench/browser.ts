/**
 * Navigate plus screenshot through the real server (HTTP, the pipeline, the URL guard on every
 * request, the context's guard proxy, puppeteer, Chromium) against the same two calls made
 * with puppeteer-core directly in this process on a Chromium with the same required flags and
 * no guard, in the same run, interleaved so both see the same machine. The page is served on
 * loopback by this script: HTML with a stylesheet, a script and an image (four requests).
 * Prints the p50 and p90 of each and the p50 ratio (goal: at most 1.15).
 *
 * `deno run -A scripts/bench/browser.ts [--runs 30]`
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

/** Run the benchmark; returns the p50 ratio. */
export async function main(args: string[] = Deno.args): Promise<number> {
  const { values } = parseArgs({ args, options: { runs: { type: "string", default: "30" } } });
  const runs = Number(values.runs);
  const executablePath = findChromium(Deno.env.toObject());
  if (!executablePath) throw new Error("Chromium not found (install the Debian package chromium)");
  const abort = new AbortController();
  const site = serveSite(abort.signal);
  const pageUrl = `http://127.0.0.1:${site.addr.port}/`;
  const profile = await Deno.makeTempDir({ prefix: "sandbar-bench-browser-" });
  const browser = await puppeteer.launch({
    executablePath,
    args: [...REQUIRED_FLAGS, `--user-data-dir=${profile}`],
    ignoreDefaultArgs: true,
    pipe: true,
    defaultViewport: null,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
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
      serverTimes.push(await timed(viaServer));
      directTimes.push(await timed(direct));
    }
    const p50 = (v: number[]) => percentile(v, 0.5);
    const p90 = (v: number[]) => percentile(v, 0.9);
    const fmt = (n: number) => `${n.toFixed(1)} ms`;
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

if (import.meta.main) await main();
