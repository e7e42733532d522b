/**
 * Every error class raised by a real server condition, through ServerClient.
 */

import assert from "node:assert/strict";
import {
  AuthenticationError,
  CapabilityNotSupportedError,
  CommandNotFoundError,
  ConnectionError,
  EndpointNotAvailableError,
  FilePolicyDeniedError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  PolicyDeniedError,
  RateLimitedError,
  SandboxError,
  ServerAPIError,
  ServerAuthError,
  ServerClient,
  ServerNotFoundError,
  ServerValidationError,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("401: a missing or wrong token is a ServerAuthError, also an AuthenticationError", async () => {
  await using server = await startTestServer();
  for (const token of [undefined, "not-the-token-0123456789"]) {
    await using client = new ServerClient(server.url, { token });
    await assert.rejects(client.discover(), (e) => {
      assert.ok(e instanceof ServerAuthError);
      assert.ok(e instanceof AuthenticationError);
      assert.ok(e instanceof SandboxError);
      assert.equal(e.status, 401);
      assert.equal(e.code, "E9001");
      assert.equal(e.serverCode, "unauthorized");
      assert.match(e.suggestion, /token/);
      return true;
    });
  }
  // A gateway header with a different value than the bearer token: ambiguous.
  await using both = new ServerClient(server.url, {
    token: server.token,
    headers: { "X-Access-Token": "another-value-0123456789" },
  });
  await assert.rejects(both.discover(), (e) => {
    assert.ok(e instanceof ServerAuthError);
    assert.equal(e.serverCode, "ambiguous_credentials");
    assert.equal(e.status, 400);
    return true;
  });
  // The gateway header alone carries the token.
  await using gateway = new ServerClient(server.url, {
    headers: { "X-Access-Token": server.token },
  });
  assert.equal((await gateway.discover()).identityId, "default");
});

Deno.test("403 missing_scope is a PolicyDeniedError carrying the scope", async () => {
  await using server = await startTestServer({
    policy: {
      identities: [{ id: "ro", token: "read-only-token-0123456789", scopes: ["files:read"] }],
    },
  });
  await using client = new ServerClient(server.url, { token: "read-only-token-0123456789" });
  await assert.rejects(client.files.mkdir("x"), (e) => {
    assert.ok(e instanceof PolicyDeniedError);
    assert.ok(!(e instanceof FilePolicyDeniedError));
    assert.equal(e.status, 403);
    assert.equal(e.code, "E9002");
    assert.equal(e.serverCode, "missing_scope");
    assert.equal(e.scope, "files:write");
    assert.equal(e.endpoint, "files_mkdir");
    return true;
  });
  assert.deepEqual(await client.files.list("."), []);
});

Deno.test("403 path_not_allowed is a FilePolicyDeniedError, also a PermissionDeniedError", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.files.readText("/etc/passwd"), (e) => {
    assert.ok(e instanceof FilePolicyDeniedError);
    assert.ok(e instanceof PermissionDeniedError);
    assert.equal(e.serverCode, "path_not_allowed");
    return true;
  });
});

Deno.test("404 endpoint_disabled is an EndpointNotAvailableError, also a CapabilityNotSupportedError", async () => {
  await using server = await startTestServer({ policy: { preset: "readonly" } });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.files.mkdir("x"), (e) => {
    assert.ok(e instanceof EndpointNotAvailableError);
    assert.ok(e instanceof CapabilityNotSupportedError);
    assert.equal(e.status, 404);
    assert.equal(e.code, "E9003");
    assert.equal(e.rule, "preset:readonly");
    return true;
  });
  // The agents group has no handlers yet: its pass-through meets the same refusal, through
  // the /v1/ error envelope.
  await assert.rejects(client.agents.models.list(), (e) => {
    assert.ok(e instanceof EndpointNotAvailableError);
    assert.equal(e.status, 404);
    return true;
  });
  const caps = await client.discover();
  assert.equal(caps.rule("files_mkdir"), "preset:readonly");
  assert.equal(caps.denial("files_mkdir"), "endpoint_disabled");
});

Deno.test("413 is a PayloadTooLargeError with the limit", async () => {
  await using server = await startTestServer({ policy: { limits: { body_bytes: 2048 } } });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.commands.run("anything", { blob: "x".repeat(10_000) }), (e) => {
    assert.ok(e instanceof PayloadTooLargeError);
    assert.equal(e.status, 413);
    assert.equal(e.limit, 2048);
    return true;
  });
});

Deno.test("429 is a RateLimitedError with retryAfter from Retry-After", async () => {
  await using server = await startTestServer({
    policy: { endpoints: { commands_list: { limits: { rate_per_minute: 2 } } } },
  });
  await using client = new ServerClient(server.url, { token: server.token });
  await client.commands.list();
  await client.commands.list();
  await assert.rejects(client.commands.list(), (e) => {
    assert.ok(e instanceof RateLimitedError);
    assert.equal(e.status, 429);
    assert.equal(e.code, "E9005");
    assert.equal(e.serverCode, "rate_limited");
    assert.ok(typeof e.retryAfter === "number" && e.retryAfter >= 1 && e.retryAfter <= 60);
    return true;
  });
});

Deno.test("404 command_not_found, 404 not_found, 400 invalid_request", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.commands.run("nope"), (e) => {
    assert.ok(e instanceof CommandNotFoundError);
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.status, 404);
    return true;
  });
  await assert.rejects(client.files.stat("missing.txt"), (e) => {
    assert.ok(e instanceof ServerNotFoundError);
    assert.ok(e instanceof NotFoundError);
    return true;
  });
  await assert.rejects(client.files.list("x", { depth: 99 }), (e) => {
    assert.ok(e instanceof ServerValidationError);
    assert.equal(e.status, 400);
    return true;
  });
  // A cwd that is not there is told to make it, not to look for NUL bytes or limits.path_max.
  await assert.rejects(client.process.shell("pwd", { cwd: "nope" }), (e) => {
    assert.ok(e instanceof ServerAPIError);
    assert.equal(e.serverCode, "invalid_path");
    assert.match(e.message, /cwd .*nope does not exist/);
    assert.match(e.suggestion, /Create the directory first/);
    assert.doesNotMatch(e.suggestion, /NUL|path_max/);
    return true;
  });
  // Every refusal is a ServerAPIError, with a suggestion and a docs URL.
  const e = await client.commands.run("nope").catch((e) => e);
  assert.ok(e instanceof ServerAPIError);
  assert.match(
    e.docsUrl,
    /^https:\/\/jsr\.io\/@sandbar\/sandbar\/doc\/sdk\/~\/CommandNotFoundError$/,
  );
});

Deno.test("an unreachable server is a ConnectionError; health stays false", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await using client = new ServerClient(`http://127.0.0.1:${port}`, { token: "t" });
  assert.equal(await client.health(), false);
  await assert.rejects(client.files.list("."), (e) => {
    assert.ok(e instanceof ConnectionError);
    assert.ok(e.cause instanceof Error);
    return true;
  });
});

Deno.test("429 concurrency_limited: raised at once by default, retried after Retry-After with retries", async () => {
  await using server = await startTestServer({
    policy: { endpoints: { shell: { limits: { concurrency: 1 } } } },
  });
  let shellCalls = 0;
  const counting = (input: Request | URL | string, init?: RequestInit) => {
    if (String(input instanceof Request ? input.url : input).endsWith("/process/shell")) {
      shellCalls++;
    }
    return fetch(input, init);
  };
  await using client = new ServerClient(server.url, { token: server.token });
  await using patient = new ServerClient(server.url, {
    token: server.token,
    retries: 10,
    fetch: counting,
  });
  const busy = client.process.shell("touch started; sleep 2.5");
  while (!(await client.files.exists("started"))) await new Promise((r) => setTimeout(r, 50));
  await assert.rejects(client.process.shell("echo hi"), (e) => {
    assert.ok(e instanceof RateLimitedError);
    assert.equal(e.serverCode, "concurrency_limited");
    assert.equal(e.retryAfter, 1);
    return true;
  });
  const r = await patient.process.shell("echo hi");
  assert.equal(r.stdout, "hi\n");
  assert.ok(shellCalls >= 2, `expected a retry, saw ${shellCalls} call(s)`);
  await busy;
});
