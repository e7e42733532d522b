// An environment variable the kernel cannot pass to a program is refused where it comes in, with
// 400 env_invalid naming the variable: a 9 MiB value used to be stored, after which every process
// start failed with E2BIG as a 500. Detected by the next shell still running.
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const post = (server: TestServer, path: string, body: unknown) =>
  server.fetch(path, { method: "POST", body: JSON.stringify(body) });

async function shellStillRuns(server: TestServer): Promise<void> {
  const res = await post(server, "/process/shell", { cmd: "echo ok" });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.stdout, "ok\n");
}

Deno.test("env size: values past the kernel's limits are 400 env_invalid, never a later 500", async (t) => {
  await using server = await startTestServer();

  await t.step("one 9 MiB value in POST /system/env", async () => {
    const res = await post(server, "/system/env", { env: { BIG: "a".repeat(9 * 1024 * 1024) } });
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 300));
    assert.equal(body.code, "env_invalid");
    assert.equal(body.param, "env");
    assert.match(body.error, /BIG/);
    await shellStillRuns(server);
  });

  await t.step("one value just over 128 KiB, and one just under", async () => {
    // NAME=value and its NUL: "V=" is 2 bytes, the NUL 1.
    let res = await post(server, "/system/env", { env: { V: "a".repeat(128 * 1024 - 2) } });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "env_invalid");
    res = await post(server, "/system/env", { env: { V: "a".repeat(128 * 1024 - 3) } });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await shellStillRuns(server);
    res = await post(server, "/system/env", { env: { V: null } });
    await res.body?.cancel();
  });

  await t.step("many values that fit one by one but not together", async () => {
    const env: Record<string, string> = {};
    for (let i = 0; i < 10; i++) env[`V${i}`] = "a".repeat(120 * 1024);
    const res = await post(server, "/system/env", { env });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "env_invalid");
    // Added a few at a time, the store stops growing at the limit too.
    let refused = false;
    for (let i = 0; i < 10 && !refused; i++) {
      const r = await post(server, "/system/env", { env: { [`W${i}`]: "a".repeat(120 * 1024) } });
      refused = r.status === 400;
      const body = await r.json();
      if (refused) assert.equal(body.code, "env_invalid");
    }
    assert.ok(refused, "the store grew past 1 MiB");
    await shellStillRuns(server);
  });

  await t.step("a request's own env map on a shell", async () => {
    const res = await post(server, "/process/shell", {
      cmd: "echo hi",
      env: { BIG: "a".repeat(9 * 1024 * 1024) },
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "env_invalid");
  });
});
