/**
 * client.system against the real server.
 */

import assert from "node:assert/strict";
import { PolicyDeniedError, ServerClient, ServerValidationError } from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("system: info, metrics, ports, packages", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const info = await client.system.info();
  assert.equal(info.os.name, "linux");
  assert.equal(info.root, server.root);
  assert.ok(info.cpus.count >= 1);
  assert.ok(info.memory.totalBytes > 0);
  assert.ok(info.disk.totalBytes > 0);
  assert.equal(typeof info.versions.deno, "string");
  assert.equal(info.user.uid, Deno.uid());
  const m = await client.system.metrics();
  assert.ok(m.cpu.percent >= 0 && m.cpu.percent <= 100);
  assert.ok(m.memory.usedBytes > 0);
  assert.equal(typeof m.load["1m"], "number");
  assert.ok(m.processes.total >= 1);
  const port = Number(new URL(server.url).port);
  const ports = await client.system.ports();
  assert.ok(ports.some((p) => p.port === port), JSON.stringify(ports));
  const deb = await client.system.packages({ manager: "deb", query: "bash", limit: 5 });
  assert.ok(deb.packages.some((p) => p.manager === "deb" && p.name === "bash"));
  assert.equal(deb.managers.deb.present, true);
  assert.ok(deb.packages.length <= 5);
});

Deno.test("system: env and setEnv reach new processes, never the server's token", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const env = await client.system.env();
  assert.ok(!Object.values(env).includes(server.token));
  assert.ok(!("SVC_SERVER_TOKEN" in env));
  const after = await client.system.setEnv({ SANDBOX_GREETING: "hello", NOT_THERE: null });
  assert.equal(after.SANDBOX_GREETING, "hello");
  assert.equal((await client.process.shell("echo $SANDBOX_GREETING")).stdout, "hello\n");
  await client.system.setEnv({ SANDBOX_GREETING: null });
  assert.ok(!("SANDBOX_GREETING" in (await client.system.env())));
  await assert.rejects(client.system.setEnv({ LD_PRELOAD: "/x.so" }), (e) => {
    assert.ok(e instanceof PolicyDeniedError);
    assert.equal(e.serverCode, "env_var_denied");
    return true;
  });
  await assert.rejects(client.system.setEnv({ "BAD=NAME": "x" }), (e) => {
    assert.ok(e instanceof ServerValidationError);
    assert.equal(e.serverCode, "env_invalid");
    return true;
  });
});
