/**
 * The browser group against the real server and a real headless Chromium (Debian's
 * `chromium`), on pages this test serves on loopback. Nothing is mocked.
 */

import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";

// ---------------------------------------------------------------------------------------------
// Pages the tests serve.

interface Site {
  base: string;
  hits: string[];
  close(): Promise<void>;
}

const html = (body: string, headers: Record<string, string> = {}) =>
  new Response(`<!doctype html>${body}`, {
    headers: { "content-type": "text/html; charset=utf-8", ...headers },
  });

function startSite(): Site {
  const hits: string[] = [];
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen() {} },
    async (req) => {
      const url = new URL(req.url);
      hits.push(url.pathname);
      switch (url.pathname) {
        case "/":
          return html(`<title>Home</title><h1>Home page</h1>`);
        case "/tall":
          return html(
            `<title>Tall</title><body style="margin:0"><div style="height:2000px;background:#08f">` +
              `tall</div></body>`,
          );
        case "/form":
          return html(
            `<title>Sign in</title><form method="post" action="/submit">` +
              `<input name="user" id="user"><input name="note" id="note" value="old">` +
              `<button id="go" type="submit">Send</button></form>`,
          );
        case "/submit": {
          const form = new URLSearchParams(await req.text());
          return html(
            `<title>Thanks</title><p id="out">user=${form.get("user")};note=${
              form.get("note")
            }</p>`,
          );
        }
        case "/console":
          return html(
            `<title>Console</title><script>console.log("hello", 42); console.warn("careful");` +
              `console.error("bad thing"); setTimeout(() => { throw new Error("boom"); });` +
              `</script>`,
          );
        case "/redirect-metadata":
          return new Response(null, {
            status: 302,
            headers: { location: "http://169.254.169.254/latest/meta-data/" },
          });
        case "/redirect-home":
          return new Response(null, { status: 302, headers: { location: "/" } });
        case "/cookie":
          return html(`<title>Cookie</title>`, { "set-cookie": "who=first; Path=/" });
        case "/whoami":
          return html(`<title>${req.headers.get("cookie") ?? "nobody"}</title>`);
        case "/never":
          // Answers only when the site closes.
          await new Promise((resolve) => abort.signal.addEventListener("abort", resolve));
          return html(`<title>Late</title>`);
        case "/sw.js":
          return new Response(`fetch("/from-service-worker")`, {
            headers: { "content-type": "text/javascript" },
          });
        default:
          return new Response("not found", { status: 404 });
      }
    },
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    hits,
    async close() {
      abort.abort();
      await server.finished;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Calling the server.

async function call(
  server: TestServer,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; json: Record<string, unknown>; bytes: Uint8Array; type: string }> {
  const init: RequestInit & { token?: string } = body === undefined ? { method: "GET" } : {
    method: "POST",
    // A string is sent as it is: "" is a POST with an empty body.
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: { "content-type": "application/json" },
  };
  if (token) init.token = token;
  const res = await server.fetch(path, init);
  const type = res.headers.get("content-type") ?? "";
  const bytes = await res.bytes();
  const json = type.includes("json") ? JSON.parse(new TextDecoder().decode(bytes)) : {};
  return { status: res.status, json, bytes, type };
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png: Uint8Array): { width: number; height: number } {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const view = new DataView(png.buffer, png.byteOffset);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

// ---------------------------------------------------------------------------------------------
// Chromium processes started by a server (descendants of its launcher).

function parentOf(pid: number): number | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

function isLiveProcess(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

function cmdline(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/**
 * Chromium processes below `root`: `main` is the browser process (no `--type=`), `dir` the
 * directory the server made for it (its `--user-data-dir` is `<dir>/profile`).
 */
function chromiumBelow(root: number): { all: number[]; main?: number; dir?: string } {
  const all: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid)) continue;
    let p: number | null = pid;
    for (let depth = 0; p !== null && p > 1 && depth < 20; depth++) {
      if (p === root) {
        if (cmdline(pid).includes("--user-data-dir=")) all.push(pid);
        break;
      }
      p = parentOf(p);
    }
  }
  const main = all.find((pid) => !cmdline(pid).includes("--type="));
  const dir = main ? /--user-data-dir=(\S+)\/profile/.exec(cmdline(main))?.[1] : undefined;
  return { all, main, dir };
}

/**
 * Every live process whose command line names `dir`: Chromium's helpers and its crash handler
 * too (which runs detached, as a child of init).
 */
function processesOf(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (Number.isInteger(pid) && isLiveProcess(pid) && cmdline(pid).includes(dir)) pids.push(pid);
  }
  return pids;
}

/** Wait until `path` no longer exists; true when that happened within `ms`. */
async function removedWithin(path: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!(await Deno.stat(path).then(() => true, () => false))) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** Wait until none of `pids` runs; true when that happened within `ms`. */
async function goneWithin(pids: number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!pids.some(isLiveProcess)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !pids.some(isLiveProcess);
}

// ---------------------------------------------------------------------------------------------

const ALICE = "alice-token-0123456789abcdef";
const BOB = "bob-token-0123456789abcdef";

Deno.test("browser: real Chromium on loopback pages", async (t) => {
  const site = startSite();
  const server = await startTestServer({
    policy: {
      endpoints: { browser: true },
      url_allow: ["http://127.0.0.1:*"],
      url_deny: ["http://127.0.0.1:*/secret*"],
      identities: [
        { id: "default", scopes: ["*"] },
        { id: "alice", token: ALICE, scopes: ["browser:use"] },
        { id: "bob", token: BOB, scopes: ["files:read"] },
      ],
    },
  });
  let chromiumDir = "";
  try {
    await t.step("a form filled with type and submitted with click", async () => {
      let r = await call(server, "/browser/navigate", { url: `${site.base}/form` });
      assert.deepEqual(r.status, 200, JSON.stringify(r.json));
      assert.deepEqual(r.json.title, "Sign in");
      assert.deepEqual(r.json.status, 200);
      r = await call(server, "/browser/type", { selector: "#user", text: "ada lovelace" });
      assert.deepEqual(r.status, 200, JSON.stringify(r.json));
      r = await call(server, "/browser/type", { selector: "#note", text: "new", clear: true });
      assert.deepEqual(r.status, 200, JSON.stringify(r.json));
      r = await call(server, "/browser/click", { selector: "#go" });
      assert.deepEqual(r.status, 200, JSON.stringify(r.json));
      assert.deepEqual(r.json.navigated, true);
      assert.deepEqual(r.json.title, "Thanks");
      assert.deepEqual(r.json.url, `${site.base}/submit`);
      r = await call(server, "/browser/content");
      assert.deepEqual(r.status, 200);
      assert.deepEqual(r.json.text, "user=ada lovelace;note=new");
      assert.match(String(r.json.html), /<p id="out">user=ada lovelace;note=new<\/p>/);
      const running = chromiumBelow(server.pid);
      assert(running.main && running.dir, "Chromium runs below the server");
      chromiumDir = running.dir;
    });

    await t.step("a screenshot has the page's size", async () => {
      let r = await call(server, "/browser/navigate", { url: `${site.base}/tall` });
      assert.deepEqual(r.status, 200);
      r = await call(server, "/browser/screenshot", {});
      assert.deepEqual(r.status, 200);
      assert.deepEqual(r.type, "image/png");
      assert.deepEqual(pngSize(r.bytes), { width: 1280, height: 720 });
      r = await call(server, "/browser/screenshot", { full_page: true });
      assert.deepEqual(pngSize(r.bytes), { width: 1280, height: 2000 });
      r = await call(server, "/browser/navigate", {
        url: `${site.base}/`,
        viewport: { width: 640, height: 480 },
      });
      assert.deepEqual(r.status, 200);
      r = await call(server, "/browser/screenshot", "");
      assert.deepEqual(r.status, 200);
      assert.deepEqual(pngSize(r.bytes), { width: 640, height: 480 });
    });

    await t.step("a PDF starts with %PDF", async () => {
      const r = await call(server, "/browser/pdf", { format: "Letter" });
      assert.deepEqual(r.status, 200);
      assert.deepEqual(r.type, "application/pdf");
      assert.deepEqual(new TextDecoder().decode(r.bytes.subarray(0, 5)), "%PDF-");
    });

    await t.step("console messages and page errors are captured, once", async () => {
      await call(server, "/browser/console"); // empty what came before
      const r0 = await call(server, "/browser/navigate", { url: `${site.base}/console` });
      assert.deepEqual(r0.status, 200);
      // The page throws in a timer: wait until the error arrived.
      const ev = await call(server, "/browser/evaluate", {
        script: "new Promise((resolve) => setTimeout(() => resolve(1), 50))",
      });
      assert.deepEqual(ev.json.result, 1);
      const r = await call(server, "/browser/console");
      const messages = r.json.messages as { type: string; text: string; time: number }[];
      assert.deepEqual(messages.map((m) => [m.type, m.text]), [
        ["log", "hello 42"],
        ["warn", "careful"],
        ["error", "bad thing"],
      ]);
      assert(messages.every((m) => typeof m.time === "number"));
      const errors = r.json.errors as { message: string }[];
      assert.deepEqual(errors.length, 1);
      assert.match(errors[0].message, /boom/);
      const again = await call(server, "/browser/console");
      assert.deepEqual(again.json, { messages: [], errors: [], blocked: [], dropped: 0 });
    });

    await t.step("evaluate answers JSON; errors and timeouts are clear", async () => {
      let r = await call(server, "/browser/evaluate", {
        script: "({ title: document.title, n: [1, 2.5, null], big: 2n ** 64n, u: undefined })",
      });
      assert.deepEqual(r.json, {
        result: { title: "Console", n: [1, 2.5, null], big: "18446744073709551616" },
      });
      r = await call(server, "/browser/evaluate", { script: "undefined" });
      assert.deepEqual(r.json, { result: null });
      r = await call(server, "/browser/evaluate", { script: "Promise.resolve(6 * 7)" });
      assert.deepEqual(r.json, { result: 42 });
      r = await call(server, "/browser/evaluate", { script: "nope.nope" });
      assert.deepEqual(r.status, 400);
      assert.deepEqual(r.json.code, "invalid_arguments");
      assert.deepEqual(r.json.param, "script");
      assert.match(String(r.json.error), /nope is not defined/);
      // Statements and top-level await, and names that may be declared again, as in a console.
      for (let i = 0; i < 2; i++) {
        r = await call(server, "/browser/evaluate", {
          script: "const n = await Promise.resolve(20); n + 22",
        });
        assert.deepEqual(r.json, { result: 42 });
      }
      r = await call(server, "/browser/evaluate", { script: "Promise.reject(new TypeError('x'))" });
      assert.deepEqual([r.status, r.json.error], [400, "The script failed: TypeError: x"]);
      // A loop is stopped and the page kept; a promise that never settles is left behind.
      r = await call(server, "/browser/evaluate", { script: "while (true) {}", timeout_ms: 1000 });
      assert.deepEqual([r.status, r.json.code], [504, "timeout"], JSON.stringify(r.json));
      r = await call(server, "/browser/evaluate", {
        script: "new Promise(() => {})",
        timeout_ms: 500,
      });
      assert.deepEqual([r.status, r.json.code], [504, "timeout"], JSON.stringify(r.json));
      r = await call(server, "/browser/evaluate", { script: "document.title" });
      assert.deepEqual(r.json, { result: "Console" });
      // A loop that starts after the script returned hangs the renderer: the page is replaced.
      r = await call(server, "/browser/evaluate", {
        script: "setTimeout(() => { while (true) {} }, 10); new Promise(() => {})",
        timeout_ms: 1000,
      });
      assert.deepEqual([r.status, r.json.code], [504, "timeout"], JSON.stringify(r.json));
      assert.match(String(r.json.error), /closed/);
      r = await call(server, "/browser/evaluate", { script: "location.href + '|' + (1 + 1)" });
      assert.deepEqual(r.json, { result: "about:blank|2" });
    });

    await t.step("click and type wait for the selector, then give up clearly", async () => {
      await call(server, "/browser/navigate", { url: `${site.base}/form` });
      let r = await call(server, "/browser/click", { selector: "#missing", timeout_ms: 300 });
      assert.deepEqual(r.status, 504);
      assert.deepEqual(r.json.code, "timeout");
      assert.match(String(r.json.error), /#missing/);
      r = await call(server, "/browser/type", { selector: "[[", text: "x", timeout_ms: 300 });
      assert.deepEqual(r.status, 400);
      assert.deepEqual(r.json.code, "invalid_arguments");
      assert.deepEqual(r.json.param, "selector");
      r = await call(server, "/browser/click", { selector: "#go", force: true });
      assert.deepEqual(r.status, 400);
      assert.deepEqual(r.json.code, "invalid_arguments");
      assert.deepEqual(r.json.param, "force");
    });

    await t.step("navigation failures: unreachable, too slow", async () => {
      const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const closedPort = probe.addr.port;
      probe.close();
      let r = await call(server, "/browser/navigate", { url: `http://127.0.0.1:${closedPort}/` });
      assert.deepEqual([r.status, r.json.code], [400, "invalid_request"], JSON.stringify(r.json));
      assert.match(String(r.json.error), new RegExp(`127\\.0\\.0\\.1:${closedPort} refused`));
      r = await call(server, "/browser/navigate", { url: `${site.base}/never`, timeout_ms: 500 });
      assert.deepEqual([r.status, r.json.code], [504, "timeout"], JSON.stringify(r.json));
      r = await call(server, "/browser/content");
      assert.deepEqual(r.json.url, "about:blank");
    });

    await t.step("a redirect to a refused address is refused", async () => {
      const r = await call(server, "/browser/navigate", { url: `${site.base}/redirect-metadata` });
      assert.deepEqual(r.status, 403, JSON.stringify(r.json));
      assert.deepEqual(r.json.code, "url_denied");
      assert.match(String(r.json.error), /169\.254\.169\.254/);
      // The page is left blank, not on Chromium's error page.
      const c = await call(server, "/browser/content");
      assert.deepEqual(c.json.url, "about:blank");
      const ok = await call(server, "/browser/navigate", { url: `${site.base}/redirect-home` });
      assert.deepEqual(ok.status, 200);
      assert.deepEqual(ok.json.url, `${site.base}/`);
    });

    await t.step("url_deny wins over url_allow, for navigations and redirects", async () => {
      const r = await call(server, "/browser/navigate", { url: `${site.base}/secret/x` });
      assert.deepEqual(r.status, 403);
      assert.deepEqual(r.json.rule, "url_deny:http://127.0.0.1:*/secret*");
      assert(!site.hits.includes("/secret/x"), "the refused page was never requested");
    });

    await t.step("the page's own requests and connections go through the guard", async () => {
      await call(server, "/browser/navigate", { url: `${site.base}/` });
      await call(server, "/browser/console");
      const port = new URL(site.base).port;
      const r = await call(server, "/browser/evaluate", {
        script: `(async () => {
          const results = [];
          for (const u of ["http://169.254.169.254/latest/", "http://127.0.0.2:${port}/",
                           "${server.url}/health", "${site.base}/secret/y"]) {
            results.push(await fetch(u).then((r) => "ok " + r.status, () => "refused"));
          }
          results.push(await new Promise((resolve) => {
            const ws = new WebSocket("ws://127.0.0.2:${port}/");
            ws.onopen = () => resolve("open");
            ws.onerror = () => resolve("refused");
          }));
          return results;
        })()`,
      });
      assert.deepEqual(r.json.result, ["refused", "refused", "refused", "refused", "refused"]);
      const blocked = (await call(server, "/browser/console")).json.blocked as {
        url: string;
        rule: string;
      }[];
      const rules = blocked.map((b) => `${b.rule} ${b.url}`);
      assert(rules.includes("url_allow http://169.254.169.254/latest/"), rules.join("\n"));
      assert(rules.includes(`url_allow http://127.0.0.2:${port}/`), rules.join("\n"));
      assert(rules.includes(`self ${server.url}/health`), rules.join("\n"));
      assert(rules.includes(`url_deny:http://127.0.0.1:*/secret* ${site.base}/secret/y`));
      // WebSockets are not intercepted as requests; the context's proxy refused the connection.
      assert(rules.includes(`url_allow 127.0.0.2:${port}`), rules.join("\n"));
      assert(!site.hits.includes("/secret/y"));
    });

    await t.step(
      "service workers are refused (their requests would miss interception)",
      async () => {
        await call(server, "/browser/navigate", { url: `${site.base}/` });
        const r = await call(server, "/browser/evaluate", {
          script: `Promise.all([
          navigator.serviceWorker.register("/sw.js").then(() => "registered", (e) => e.name),
          (() => {
            const frame = document.createElement("iframe");
            document.body.append(frame);
            return frame.contentWindow.navigator.serviceWorker.register("/sw.js")
              .then(() => "registered", (e) => e.name);
          })(),
        ])`,
        });
        assert.deepEqual(r.json.result, ["SecurityError", "SecurityError"]);
        assert(!site.hits.includes("/sw.js"));
      },
    );

    await t.step("each identity has its own context and page", async () => {
      let r = await call(server, "/browser/navigate", { url: `${site.base}/cookie` });
      assert.deepEqual(r.status, 200);
      r = await call(server, "/browser/navigate", { url: `${site.base}/whoami` });
      assert.deepEqual(r.json.title, "who=first");
      r = await call(server, "/browser/navigate", { url: `${site.base}/whoami` }, ALICE);
      assert.deepEqual(r.status, 200);
      assert.deepEqual(r.json.title, "nobody");
      r = await call(server, "/browser/content");
      assert.deepEqual(r.json.title, "who=first");
      r = await call(server, "/browser/content", undefined, BOB);
      assert.deepEqual(r.status, 403);
      assert.deepEqual(r.json.code, "missing_scope");
    });

    await t.step("Chromium killed by hand: the next request works", async () => {
      const before = chromiumBelow(server.pid);
      assert(before.main && before.dir, "a Chromium browser process runs");
      const family = processesOf(before.dir);
      assert(family.length > 1, "helpers run beside the browser process");
      Deno.kill(before.main, "SIGKILL");
      assert(await goneWithin([before.main], 10_000));
      const r = await call(server, "/browser/navigate", { url: `${site.base}/` });
      assert.deepEqual(r.status, 200, JSON.stringify(r.json));
      assert.deepEqual(r.json.title, "Home");
      const after = chromiumBelow(server.pid);
      assert(after.main && after.dir);
      assert.notEqual(after.main, before.main);
      assert.notEqual(after.dir, before.dir);
      // The dead one's helpers, crash handler and directory are gone.
      assert(await goneWithin(family, 15_000), `left: ${family.filter(isLiveProcess)}`);
      assert(await removedWithin(before.dir, 15_000), `${before.dir} was not removed`);
      const content = await call(server, "/browser/content", undefined, ALICE);
      assert.deepEqual(content.status, 200);
      assert.deepEqual(content.json.url, "about:blank");
      chromiumDir = after.dir;
    });
  } finally {
    await server.close();
    await site.close();
  }
  // Closing the server closes Chromium: none of its processes is left, nor its directory.
  assert(chromiumDir, "Chromium ran");
  const left = processesOf(chromiumDir);
  assert(await goneWithin(left, 15_000), `left running: ${left.filter(isLiveProcess)}`);
  assert.deepEqual(processesOf(chromiumDir), []);
  assert(await removedWithin(chromiumDir, 15_000));
});

Deno.test("browser: loopback and private addresses are refused without url_allow", async () => {
  await using server = await startTestServer({ policy: { endpoints: { browser: true } } });
  const cases: [string, string, string][] = [
    ["http://127.0.0.1:8080/", "url_denied", "private:loopback"],
    ["http://localhost:8080/", "url_denied", "private:loopback"],
    ["http://0x7f.1/", "url_denied", "private:loopback"],
    ["http://[::1]:8080/", "url_denied", "private:loopback"],
    ["http://[::ffff:127.0.0.1]/", "url_denied", "private:loopback"],
    ["http://169.254.169.254/latest/meta-data/", "url_denied", "private:link-local"],
    ["http://10.1.2.3/", "url_denied", "private:private"],
    ["http://192.168.0.1/", "url_denied", "private:private"],
    ["http://[fd00::1]/", "url_denied", "private:private"],
    ["http://0.0.0.0:8080/", "url_denied", "private:unspecified"],
    ["file:///etc/passwd", "url_invalid", "scheme:file"],
    ["javascript:alert(1)", "url_invalid", "scheme:javascript"],
  ];
  for (const [url, code, rule] of cases) {
    const r = await call(server, "/browser/navigate", { url });
    assert.deepEqual([r.status, r.json.code, r.json.rule], [
      code === "url_denied" ? 403 : 400,
      code,
      rule,
    ], url);
    assert.deepEqual(r.json.param, "url");
  }
  const bad = await call(server, "/browser/navigate", { url: "not a url" });
  assert.deepEqual([bad.status, bad.json.code], [400, "url_invalid"]);
  // Refusals happen before Chromium is needed: none was launched.
  assert.deepEqual(chromiumBelow(server.pid).all, []);
  const c = await call(server, "/browser/console");
  assert.deepEqual(c.json, { messages: [], errors: [], blocked: [], dropped: 0 });
  assert.deepEqual(chromiumBelow(server.pid).all, []);
});

/** This machine's own name when it resolves to loopback (as `/etc/hosts` usually has it), or null. */
const loopbackName = await (async () => {
  const { lookup } = await import("node:dns/promises");
  const name = Deno.hostname().toLowerCase();
  const addresses = await lookup(name, { all: true }).catch(() => []);
  return name !== "localhost" && addresses.some((a) => /^127\.|^::1$/.test(a.address))
    ? name
    : null;
})();

Deno.test({
  name: "browser: a name that resolves to loopback is refused by the proxy",
  // It needs a name other than `localhost` that resolves to loopback, and makes none: this
  // machine's own name, where `/etc/hosts` maps it so (as on the test machines).
  ignore: loopbackName === null,
}, async () => {
  const name = loopbackName!;
  const site = startSite();
  const port = new URL(site.base).port;
  // `http://*:*` lets any http URL through the list, but never to a private address; only the
  // literal 127.0.0.1 is allowed there, so the name is refused once the proxy resolved it.
  await using server = await startTestServer({
    policy: { endpoints: { browser: true }, url_allow: ["http://127.0.0.1:*", "http://*:*"] },
  });
  try {
    const r = await call(server, "/browser/navigate", { url: `http://${name}:${port}/` });
    assert.deepEqual(r.status, 403, JSON.stringify(r.json));
    assert.deepEqual(r.json.code, "url_denied");
    assert.deepEqual(r.json.rule, "private:loopback");
    assert.deepEqual(site.hits, []);
    const ok = await call(server, "/browser/navigate", { url: `${site.base}/` });
    assert.deepEqual(ok.status, 200);
  } finally {
    await site.close();
  }
});

Deno.test("browser: off unless switched on, with the matching rule", async (t) => {
  const ruleOf = async (server: TestServer) => {
    const caps = (await call(server, "/capabilities")).json;
    const e = (caps.endpoints as Record<string, { enabled: boolean; rule: string | null }>)
      .browser_navigate;
    return [e.enabled, e.rule];
  };
  await t.step("default: off", async () => {
    await using server = await startTestServer();
    assert.deepEqual(await ruleOf(server), [false, "default:opt-in:browser"]);
    const r = await call(server, "/browser/navigate", { url: "http://127.0.0.1/" });
    assert.deepEqual(r.status, 404);
    assert.deepEqual(r.json.code, "endpoint_disabled");
    assert.deepEqual(r.json.rule, "default:opt-in:browser");
  });
  await t.step("the environment switch", async () => {
    await using server = await startTestServer({ env: { SANDBAR_GROUP_BROWSER: "1" } });
    assert.deepEqual(await ruleOf(server), [true, "env:SANDBAR_GROUP_BROWSER:browser"]);
  });
  await t.step("the policy, over the environment", async () => {
    await using on = await startTestServer({ policy: { endpoints: { browser: true } } });
    assert.deepEqual(await ruleOf(on), [true, "policy:endpoints.browser"]);
    await using off = await startTestServer({
      policy: { endpoints: { browser: false } },
      env: { SANDBAR_GROUP_BROWSER: "1" },
    });
    assert.deepEqual(await ruleOf(off), [false, "policy:endpoints.browser"]);
  });
  await t.step("preset open", async () => {
    await using server = await startTestServer({ policy: { preset: "open" } });
    assert.deepEqual(await ruleOf(server), [true, "preset:open"]);
  });
  await t.step("a bad url pattern stops the server at start", async () => {
    const err = await startTestServer({
      policy: { endpoints: { browser: true }, url_allow: ["127.0.0.1:*"] },
    }).then(async (s) => {
      await s.close();
      return "started";
    }, (e: Error) => e.message);
    assert.match(err, /url_allow: "127\.0\.0\.1:\*" is not scheme:\/\/host/);
  });
});

Deno.test("browser: a missing Chromium is a clear error, and nothing is left half made", async () => {
  await using server = await startTestServer({
    policy: { endpoints: { browser: true }, url_allow: ["http://127.0.0.1:*"] },
    env: { SANDBAR_CHROMIUM: "/nonexistent/chromium" },
  });
  for (let i = 0; i < 2; i++) {
    const r = await call(server, "/browser/navigate", { url: "http://127.0.0.1:9/" });
    assert.deepEqual(r.status, 500);
    assert.match(String(r.json.error), /Chromium was not found.*SANDBAR_CHROMIUM/);
  }
  const c = await call(server, "/browser/console");
  assert.deepEqual(c.json, { messages: [], errors: [], blocked: [], dropped: 0 });
});
