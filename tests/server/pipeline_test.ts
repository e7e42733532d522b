// The request pipeline over real HTTP: each error code it owns, and the contract's order.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../helpers/server.ts";

const COMMANDS = fileURLToPath(new URL("./fixtures/commands.ts", import.meta.url));

Deno.test("an unmatched route is 404 with 'Not found: <path>', code not_found and no endpoint", async () => {
  await using server = await startTestServer();
  const res = await server.fetch("/no/such/route");
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), {
    error: "Not found: /no/such/route",
    type: "NotFoundError",
    code: "not_found",
  });
  // A known path with another method matches no route either.
  const wrongMethod = await server.fetch("/health", { method: "DELETE" });
  assert.equal(wrongMethod.status, 404);
  assert.deepEqual(await wrongMethod.json(), {
    error: "Not found: /health",
    type: "NotFoundError",
    code: "not_found",
  });
  // Unmatched on the PTY port too.
  const pty = await fetch(`${server.ptyUrl.replace("ws:", "http:")}/nope`);
  assert.equal(pty.status, 404);
  assert.deepEqual(await pty.json(), {
    error: "Not found: /nope",
    type: "NotFoundError",
    code: "not_found",
  });
  const v1 = await server.fetch("/v1/no/such");
  assert.equal(v1.status, 404);
  const body = await v1.json();
  assert.equal(body.error.message, "Not found: /v1/no/such");
  assert.equal(body.error.code, "not_found");
});

Deno.test("authentication: health is public, tokens by Bearer or X-Access-Token", async (t) => {
  await using server = await startTestServer({ commandsFile: COMMANDS });
  await t.step("health needs no token", async () => {
    const res = await server.fetch("/health", { token: null });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok" });
  });
  await t.step("missing token is 401 unauthorized", async () => {
    const res = await server.fetch("/commands", { token: null });
    assert.equal(res.status, 401);
    const body = await res.json();
    assert.equal(body.code, "unauthorized");
    assert.equal(body.endpoint, "commands_list");
    assert.equal(body.type, "AuthenticationError");
  });
  await t.step("wrong token is 401, even one character off", async () => {
    const res = await server.fetch("/commands", { token: server.token.slice(0, -1) + "X" });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).code, "unauthorized");
    // The Bearer value is compared in place in the header: a token that only starts or ends
    // like the real one must not pass either.
    for (const token of [server.token.slice(0, -1), server.token + "X", "X" + server.token]) {
      const other = await server.fetch("/commands", { token });
      assert.equal(other.status, 401, `token ${token}`);
      await other.body?.cancel();
    }
  });
  await t.step("X-Access-Token works", async () => {
    const res = await server.fetch("/commands", {
      token: null,
      headers: { "x-access-token": server.token },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
  await t.step("the same token in both headers is fine", async () => {
    const res = await server.fetch("/commands", {
      headers: { authorization: `Bearer ${server.token}`, "x-access-token": server.token },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
  await t.step("two different credential values are 400 ambiguous_credentials", async () => {
    const res = await server.fetch("/commands", {
      headers: { authorization: `Bearer ${server.token}`, "x-access-token": "other-value-123" },
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "ambiguous_credentials");
    const headers = new Headers();
    headers.append("x-access-token", server.token);
    headers.append("x-access-token", "another-token-456");
    const twice = await server.fetch("/commands", { token: null, headers });
    assert.equal(twice.status, 400);
    assert.equal((await twice.json()).code, "ambiguous_credentials");
  });
});

Deno.test("admission: disabled endpoint, missing scope, rate and concurrency", async (t) => {
  await using server = await startTestServer({
    commandsFile: COMMANDS,
    policy: {
      identities: [
        { id: "reader", token: "reader-token-0123456789", scopes: ["commands:read"] },
        { id: "admin", token: "admin-token-0123456789", scopes: ["*"] },
      ],
      endpoints: {
        capabilities_check: false,
        commands_list: { limits: { rate_per_minute: 2 } },
        commands_run: { limits: { concurrency: 1 } },
      },
    },
  });
  await t.step("a disabled endpoint is 404 endpoint_disabled with its rule", async () => {
    const res = await server.fetch("/capabilities/check", { method: "POST", body: "{}" });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), {
      error: "Endpoint capabilities_check is disabled",
      type: "EndpointNotAvailableError",
      code: "endpoint_disabled",
      endpoint: "capabilities_check",
      rule: "policy:endpoints.capabilities_check",
    });
  });
  await t.step("a missing scope is 403 missing_scope", async () => {
    const res = await server.fetch("/commands/greet", {
      method: "POST",
      token: "reader-token-0123456789",
      body: JSON.stringify({ name: "x" }),
    });
    assert.equal(res.status, 403);
    const body = await res.json();
    assert.equal(body.code, "missing_scope");
    assert.equal(body.scope, "commands:run");
  });
  await t.step("the rate limit gives 429 rate_limited with Retry-After", async () => {
    for (let i = 0; i < 2; i++) {
      const ok = await server.fetch("/commands");
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
    }
    const res = await server.fetch("/commands");
    assert.equal(res.status, 429);
    assert.equal((await res.json()).code, "rate_limited");
    const retry = Number(res.headers.get("retry-after"));
    assert.ok(retry >= 1 && retry <= 30, `Retry-After ${retry}`);
    // Limits are per identity: another identity still has its own bucket.
    const other = await server.fetch("/commands", { token: "reader-token-0123456789" });
    assert.equal(other.status, 200);
    await other.body?.cancel();
  });
  await t.step("the concurrency limit gives 429 concurrency_limited", async () => {
    const held = server.fetch("/commands/hold", { method: "POST" });
    // Wait until the hold is in flight: a second call is refused while it is.
    let refused: Response | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await server.fetch("/commands/greet", {
        method: "POST",
        body: JSON.stringify({ name: "x" }),
      });
      if (res.status === 429) refused = res;
      else {
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    assert.ok(refused, "a second concurrent call was never refused");
    assert.equal((await refused.json()).code, "concurrency_limited");
    assert.ok(refused.headers.get("retry-after"));
    // Limits are per identity, so another identity can release the held call.
    const released = await server.fetch("/commands/release", {
      method: "POST",
      token: "admin-token-0123456789",
    });
    assert.equal(await released.json(), true);
    const done = await held;
    assert.equal(await done.json(), "released");
    const after = await server.fetch("/commands/greet", {
      method: "POST",
      body: JSON.stringify({ name: "x" }),
    });
    assert.equal(after.status, 200, "the slot is released when the response ends");
    await after.body?.cancel();
  });
});

Deno.test("a repeated query parameter is 400 duplicate_parameter; bracket arrays may repeat", async () => {
  await using server = await startTestServer();
  const res = await server.fetch("/commands?a=1&a=2");
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.code, "duplicate_parameter");
  assert.equal(body.param, "a");
  const arrays = await server.fetch("/commands?status%5B%5D=a&status%5B%5D=b");
  assert.equal(arrays.status, 200);
  await arrays.body?.cancel();
});

Deno.test("the body limit is enforced before reading, with and without Content-Length", async (t) => {
  await using server = await startTestServer({
    commandsFile: COMMANDS,
    policy: { limits: { body_bytes: 1024 } },
  });
  await t.step("Content-Length over the limit", async () => {
    const res = await server.fetch("/commands/echo", {
      method: "POST",
      body: JSON.stringify({ data: "x".repeat(2000) }),
    });
    assert.equal(res.status, 413);
    const body = await res.json();
    assert.equal(body.code, "payload_too_large");
    assert.equal(body.limit, 1024);
  });
  await t.step("a chunked body is cut off once it passes the limit", async () => {
    const chunk = new TextEncoder().encode("x".repeat(512));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Far more than the limit: the server must stop reading long before the end.
        if (sent++ < 10_000) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await server.fetch("/commands/echo", { method: "POST", body: stream });
    assert.equal(res.status, 413);
    assert.equal((await res.json()).code, "payload_too_large");
    assert.ok(sent < 10_000, "the whole body was read");
  });
  await t.step("a body under the limit passes", async () => {
    const res = await server.fetch("/commands/echo", {
      method: "POST",
      body: JSON.stringify({ data: "small" }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { data: "small" });
  });
});

Deno.test("the pipeline's order is the contract's", async (t) => {
  await using server = await startTestServer({
    commandsFile: COMMANDS,
    policy: {
      identities: [{ id: "lister", token: "lister-token-0123456789", scopes: ["commands:read"] }],
      endpoints: { capabilities_check: false },
      limits: { body_bytes: 100 },
    },
  });
  await t.step("unauthenticated call to a disabled endpoint: 401, not 404", async () => {
    const res = await server.fetch("/capabilities/check", { method: "POST", token: null });
    assert.equal(res.status, 401);
    await res.body?.cancel();
  });
  await t.step("disabled endpoint with a repeated parameter: 404, not 400", async () => {
    const res = await server.fetch("/capabilities/check?x=1&x=2", { method: "POST" });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).code, "endpoint_disabled");
  });
  await t.step("oversized body without the scope: 403, not 413", async () => {
    const res = await server.fetch("/commands/echo", {
      method: "POST",
      token: "lister-token-0123456789",
      body: JSON.stringify({ data: "x".repeat(1000) }),
    });
    assert.equal(res.status, 403);
    assert.equal((await res.json()).code, "missing_scope");
  });
  await t.step("repeated parameter with an oversized body: 400, not 413", async () => {
    const res = await server.fetch("/commands/echo?a=1&a=2", {
      method: "POST",
      body: JSON.stringify({ data: "x".repeat(1000) }),
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "duplicate_parameter");
  });
});

Deno.test("errors under /v1/ use the OpenAI envelope", async () => {
  await using server = await startTestServer();
  const res = await server.fetch("/v1/agents");
  assert.equal(res.status, 404);
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  assert.equal(body.error.code, "endpoint_disabled");
  assert.equal(body.error.type, "not_found_error");
  const unauth = await server.fetch("/v1/agents", { token: null });
  assert.equal(unauth.status, 401);
  assert.equal((await unauth.json()).error.type, "authentication_error");
});

function auditLines(stderr: string): Record<string, unknown>[] {
  return stderr.split("\n").filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l));
}

Deno.test("audit: JSON lines by the audit setting, never a token or a body", async (t) => {
  for (const setting of ["all", "deny", "off"] as const) {
    await t.step(`audit ${setting}`, async () => {
      const server = await startTestServer({ commandsFile: COMMANDS, policy: { audit: setting } });
      const ok = await server.fetch("/commands/echo", {
        method: "POST",
        body: JSON.stringify({ data: "secret-body-text" }),
      });
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
      const denied = await server.fetch("/commands", { token: "wrong-token-value-xyz" });
      assert.equal(denied.status, 401);
      await denied.body?.cancel();
      await server.close();
      const err = server.stderr();
      const lines = auditLines(err);
      assert.ok(!err.includes(server.token), "a token was logged");
      assert.ok(!err.includes("wrong-token-value-xyz"), "a presented token was logged");
      assert.ok(!err.includes("secret-body-text"), "a body was logged");
      const allow = lines.find((l) => l.endpoint === "commands_run");
      const deny = lines.find((l) => l.endpoint === "commands_list");
      if (setting === "off") assert.equal(lines.length, 0);
      if (setting === "deny") assert.equal(allow, undefined);
      if (setting === "all") {
        assert.deepEqual({ ...allow, time: undefined }, {
          time: undefined,
          endpoint: "commands_run",
          identity: "default",
          decision: "allow",
          status: 200,
          code: null,
        });
      }
      if (setting !== "off") {
        assert.equal(deny?.decision, "deny");
        assert.equal(deny?.code, "unauthorized");
        assert.equal(deny?.identity, null);
        assert.ok(!Number.isNaN(Date.parse(deny?.time as string)));
      }
    });
  }
});
