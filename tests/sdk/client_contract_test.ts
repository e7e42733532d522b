/**
 * The ServerClient's side of the contract's last differences: `timeout` in seconds (default 30,
 * a millisecond-looking value refused), unknown options refused with the nearest known one,
 * `capabilities` not assignable, and `rule(endpoint)` only for a disabled endpoint.
 */

import assert from "node:assert/strict";
import { ServerClient, TimeoutError, ValidationError } from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

/** A TCP listener that accepts connections and never answers: a request to it can only time out. */
function silentServer(): { url: string; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) conns.push(conn);
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${listener.addr.port}`,
    close() {
      for (const c of conns) c.close();
      listener.close();
    },
  };
}

Deno.test("ServerClient timeout is in seconds: default 30, and a request is cut after it", async () => {
  assert.equal(new ServerClient("http://127.0.0.1:9000").timeout, 30);
  assert.equal(new ServerClient("http://127.0.0.1:9000", { timeout: 30 }).timeout, 30);
  const silent = silentServer();
  try {
    await using client = new ServerClient(silent.url, { timeout: 0.2 });
    await assert.rejects(client.system.info(), (e) => {
      assert.ok(e instanceof TimeoutError);
      assert.match(e.message, /took over 0\.2 s/);
      return true;
    });
    // A call's own requestTimeout is in seconds too.
    await using patient = new ServerClient(silent.url, { timeout: 600 });
    await assert.rejects(patient.system.info({ requestTimeout: 0.1 }), /took over 0\.1 s/);
  } finally {
    silent.close();
  }
});

Deno.test("ServerClient refuses a timeout over a day as probably milliseconds", () => {
  assert.throws(() => new ServerClient("http://127.0.0.1:9000", { timeout: 120_000 }), (e) => {
    assert.ok(e instanceof ValidationError);
    assert.match(
      e.message,
      /timeout is in seconds and at most 86400.*120000 looks like milliseconds/,
    );
    assert.match(e.suggestion, /timeout: 120 for 120000 ms/);
    return true;
  });
  assert.throws(() => new ServerClient("http://127.0.0.1:9000", { timeout: -1 }), ValidationError);
  assert.equal(new ServerClient("http://127.0.0.1:9000", { timeout: 86_400 }).timeout, 86_400);
  assert.equal(new ServerClient("http://127.0.0.1:9000", { timeout: 0 }).timeout, 0); // none
});

Deno.test("ServerClient refuses an unknown option, naming the nearest known one", () => {
  assert.throws(
    () => new ServerClient("http://127.0.0.1:9000", { timeoutMs: 5000 } as never),
    (e) => {
      assert.ok(e instanceof ValidationError);
      assert.match(
        e.message,
        /ServerClient: unknown option 'timeoutMs'; did you mean 'timeout' \(in seconds\)\?/,
      );
      return true;
    },
  );
  assert.throws(
    () => new ServerClient("http://127.0.0.1:9000", { tokn: "x" } as never),
    /unknown option 'tokn'; did you mean 'token'\?/,
  );
});

Deno.test("capabilities is read-only; rule() names only the rule that disabled an endpoint", async () => {
  await using server = await startTestServer({
    policy: { endpoints: { terminal: false, browser: true } },
  });
  await using client = new ServerClient(server.url, { token: server.token });
  const caps = await client.discover();
  assert.equal(client.capabilities, caps);
  assert.throws(() => {
    (client as { capabilities: unknown }).capabilities = null;
  }, TypeError);
  assert.equal(client.capabilities, caps);

  assert.equal(caps.info("pty_list")?.enabled, false);
  assert.equal(caps.rule("pty_list"), "policy:endpoints.terminal");
  // Enabled by a rule: the rule is in info(), and rule() is null, as for any enabled endpoint.
  assert.equal(caps.info("browser_navigate")?.enabled, true);
  assert.equal(caps.info("browser_navigate")?.rule, "policy:endpoints.browser");
  assert.equal(caps.rule("browser_navigate"), null);
  assert.equal(caps.rule("files_list"), null);
  assert.equal(caps.rule("no_such_endpoint"), null);
  client.forgetDiscovery();
  assert.equal(client.capabilities, null);
});
