// The core group: health, the capabilities document and the authoritative check.
import assert from "node:assert/strict";
import { ENDPOINTS, GROUP_SIZES } from "../../server/endpoints.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("the capabilities document describes every endpoint for the caller", async () => {
  await using server = await startTestServer({
    policy: {
      identities: [{ id: "reader", token: "reader-token-0123456789", scopes: ["commands:read"] }],
      endpoints: { commands_run: { limits: { concurrency: 3 } } },
    },
  });
  const doc = await (await server.fetch("/capabilities", { token: "reader-token-0123456789" }))
    .json();
  assert.equal(doc.identity_id, "reader");
  assert.deepEqual(doc.scopes, ["commands:read"]);
  assert.equal(doc.preset, "standard");
  assert.equal(doc.api_version, "1");
  assert.match(doc.server_version, /^\d+\.\d+\.\d+/);
  assert.match(doc.revision, /^[0-9a-f]{12}$/);
  assert.equal(doc.configured, true);
  assert.ok(Array.isArray(doc.warnings));
  assert.deepEqual(Object.keys(doc.endpoints).sort(), ENDPOINTS.map((e) => e.id).sort());
  assert.equal(Object.keys(doc.endpoints).length, 118);
  const list = doc.endpoints.commands_list;
  assert.deepEqual(
    { ...list, limits: undefined },
    {
      method: "GET",
      path: "/commands",
      group: "commands",
      port: "http",
      enabled: true,
      allowed: true,
      reason: null,
      rule: null,
      scopes: ["commands:read"],
      limits: undefined,
    },
  );
  const run = doc.endpoints.commands_run;
  assert.equal(run.allowed, false);
  assert.equal(run.reason, "missing_scope");
  assert.equal(run.limits.concurrency, 3);
  assert.equal(run.limits.body_bytes, 10 * 1024 * 1024);
  // The agents group is opt-in: off, and the rule says which layer decided.
  const agents = doc.endpoints.agents_sessions_subagents_list;
  assert.equal(agents.reason, "endpoint_disabled");
  assert.equal(agents.rule, "default:opt-in:agents");
  assert.equal(doc.endpoints.agents_create.rule, "default:opt-in:agents");
  assert.equal(doc.endpoints.pty_connect.port, "pty");
  for (const [group, size] of Object.entries(GROUP_SIZES)) {
    assert.equal(doc.group_summary[group].total, size, group);
    assert.equal(doc.groups[group], doc.group_summary[group].enabled > 0, group);
  }
  assert.equal(doc.groups.core, true);
  assert.equal(doc.group_summary.core.enabled, 3);
  // A different identity sees its own answers.
  const mine = await (await server.fetch("/capabilities")).json();
  assert.equal(mine.identity_id, "default");
  assert.equal(mine.endpoints.commands_run.allowed, true);
});

Deno.test("capabilities_check decides endpoint, path and operation without running anything", async (t) => {
  await using server = await startTestServer({
    policy: {
      paths: { deny: ["**/.env", "secrets"], read_only: ["ref"] },
      identities: [{ id: "reader", token: "reader-token-0123456789", scopes: ["files:read"] }],
    },
  });
  const check = async (body: unknown, token?: string) => {
    const res = await server.fetch("/capabilities/check", {
      method: "POST",
      body: JSON.stringify(body),
      token,
    });
    assert.equal(res.status, 200);
    return await res.json();
  };
  await Deno.mkdir(`${server.root}/ref`);
  await t.step("endpoint only", async () => {
    const d = await check({ endpoint: "commands_list" });
    assert.equal(d.allowed, true);
    const unknown = await check({ endpoint: "no_such_endpoint" });
    assert.equal(unknown.allowed, false);
    assert.equal(unknown.code, "unknown_endpoint");
    const disabled = await check({ endpoint: "agents_automations_list" });
    assert.equal(disabled.code, "endpoint_disabled");
    assert.equal(disabled.rule, "default:opt-in:agents");
    const scope = await check({ endpoint: "commands_list" }, "reader-token-0123456789");
    assert.equal(scope.code, "missing_scope");
  });
  const endpoint = "files_upload";
  await t.step("paths: allowed, outside, denied, read-only, invalid", async () => {
    const inside = await check({ endpoint, path: "a/b.txt" });
    assert.equal(inside.allowed, true);
    assert.equal(inside.path, `${server.root}/a/b.txt`);
    assert.equal(inside.operation, "write");
    const outside = await check({ endpoint, path: "../../etc/passwd" });
    assert.equal(outside.code, "path_not_allowed");
    const denied = await check({ endpoint, path: "app/.env" });
    assert.equal(denied.code, "path_denied");
    const below = await check({ endpoint, path: "secrets/key.pem" });
    assert.equal(below.code, "path_denied");
    const ro = await check({ endpoint, path: "ref/x.txt" });
    assert.equal(ro.code, "read_only");
    const roRead = await check({ endpoint, path: "ref/x.txt", operation: "read" });
    assert.equal(roRead.allowed, true);
    const nul = await check({ endpoint, path: "a\u0000b" });
    assert.equal(nul.code, "invalid_path");
    const long = await check({ endpoint, path: "a/".repeat(3000) });
    assert.equal(long.code, "invalid_path");
  });
  await t.step("never an existence oracle", async () => {
    await Deno.writeTextFile(`${server.root}/exists.txt`, "x");
    for (const base of [".", "ref", "../outside", "app"]) {
      const a = await check({ endpoint, path: `${base}/exists.txt` });
      const b = await check({ endpoint, path: `${base}/absent.txt` });
      assert.deepEqual(
        { ...a, path: a.path?.replace("exists", "X"), reason: a.reason.replace("exists", "X") },
        { ...b, path: b.path?.replace("absent", "X"), reason: b.reason.replace("absent", "X") },
      );
    }
  });
  await t.step("bad requests are 400", async () => {
    const res = await server.fetch("/capabilities/check", { method: "POST", body: "not json" });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "invalid_request");
    const op = await server.fetch("/capabilities/check", {
      method: "POST",
      body: JSON.stringify({ endpoint: "files_list", path: "x", operation: "chmod" }),
    });
    assert.equal(op.status, 400);
    assert.equal((await op.json()).param, "operation");
  });
});
