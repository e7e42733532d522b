/**
 * client.browser against the real server and a real headless Chromium, on pages this test
 * serves on loopback.
 */

import assert from "node:assert/strict";
import {
  EndpointNotAvailableError,
  PolicyDeniedError,
  ServerClient,
  ServerValidationError,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

const FORM = `<!DOCTYPE html><html><head><title>Form</title></head><body>
<form action="/after" method="get"><input name="q"><button type="submit">Go</button></form>
<script>console.log("hello", 6 * 7)</script></body></html>`;

function servePages() {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/after") {
      const q = url.searchParams.get("q") ?? "";
      return new Response(`<html><head><title>After</title></head><body>got ${q}</body></html>`, {
        headers: { "content-type": "text/html" },
      });
    }
    return new Response(FORM, { headers: { "content-type": "text/html" } });
  });
}

Deno.test("browser: the opt-in group is off by default", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.browser.content(), (e) => {
    assert.ok(e instanceof EndpointNotAvailableError);
    assert.match(e.rule ?? "", /browser/);
    return true;
  });
});

Deno.test("browser: navigate, type, click, content, evaluate, screenshot, pdf, console", async () => {
  await using pages = servePages();
  const site = `http://127.0.0.1:${pages.addr.port}`;
  await using server = await startTestServer({
    policy: { endpoints: { browser: true }, url_allow: ["http://127.0.0.1:*"] },
  });
  await using client = new ServerClient(server.url, { token: server.token });
  const nav = await client.browser.navigate(`${site}/`);
  assert.deepEqual([nav.status, nav.title], [200, "Form"]);
  await client.browser.type("input[name=q]", "sandbar");
  const clicked = await client.browser.click("button[type=submit]");
  assert.equal(clicked.navigated, true);
  assert.match(clicked.url, /\/after\?q=sandbar$/);
  const content = await client.browser.content();
  assert.equal(content.title, "After");
  assert.equal(content.text.trim(), "got sandbar");
  assert.equal(await client.browser.evaluate<number>("6 * 7"), 42);
  assert.deepEqual(await client.browser.evaluate("({a: [1, 'x']})"), { a: [1, "x"] });
  const png = await client.browser.screenshot();
  assert.deepEqual([...png.slice(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
  const view = new DataView(png.buffer, png.byteOffset);
  assert.deepEqual([view.getUint32(16), view.getUint32(20)], [1280, 720]);
  const pdf = await client.browser.pdf();
  assert.equal(new TextDecoder().decode(pdf.slice(0, 5)), "%PDF-");
  const log = await client.browser.console();
  assert.ok(log.messages.some((m) => m.text === "hello 42"), JSON.stringify(log));
  await assert.rejects(client.browser.evaluate("throw new Error('boom')"), ServerValidationError);
});

Deno.test("browser: a private address outside url_allow is refused with url_denied", async () => {
  await using server = await startTestServer({ policy: { endpoints: { browser: true } } });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.browser.navigate("http://169.254.169.254/"), (e) => {
    assert.ok(e instanceof PolicyDeniedError);
    assert.equal(e.serverCode, "url_denied");
    return true;
  });
  await assert.rejects(client.browser.navigate("not a url"), (e) => {
    assert.ok(e instanceof ServerValidationError);
    assert.equal(e.serverCode, "url_invalid");
    return true;
  });
});
