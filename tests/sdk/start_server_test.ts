/**
 * `sandbox.startServer()` in a real local sandbox, where the sandbox's own server already holds
 * port 9000: with nothing asked it is that server; asked for another policy it starts a second
 * server program on the first free ports from 9100; asked for that on 9000 it refuses by name.
 */

import assert from "node:assert/strict";
import { landlockAbi } from "../../server/confine/landlock.ts";
import { ConnectionError, Sandbox, ServerAuthError, ValidationError } from "../../sdk/mod.ts";
import { assertNothingLeft, dropSandbarHome, useSandbarHome } from "./sandbox_helpers.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

const listening = async (sandbox: Sandbox) =>
  new Set((await sandbox.server.system.ports()).map((p) => p.port));

Deno.test("startServer: the sandbox's own server, a second and a third server, a refusal", async (t) => {
  await using sandbox = await Sandbox.create();

  await t.step("with no options it is the running server on 9000, and nothing starts", async () => {
    const before = await sandbox.commands.list();
    assert.equal(await sandbox.startServer(), sandbox.server);
    assert.equal(await sandbox.startServer({ port: 9000, timeout: 5 }), sandbox.server);
    assert.deepEqual(await sandbox.commands.list(), before);
  });

  await t.step("a policy on port 9000 is refused, naming port and policy", async () => {
    await assert.rejects(
      () => sandbox.startServer({ port: 9000, policy: "readonly" }),
      (e: Error) =>
        e instanceof ValidationError && /port 9000/.test(e.message) && /policy/.test(e.message),
    );
    assert.equal((await listening(sandbox)).has(9100), false, "nothing was started");
  });

  await t.step({
    name: "a policy without a port starts a server on 9100, then the next on 9102",
    fn: async () => {
      const readonly = await sandbox.startServer({ policy: "readonly", timeout: 60 });
      assert.match(readonly.baseUrl, /\/_port\/9100$/);
      const caps = await readonly.discover();
      assert.equal(caps.can("files_list"), true);
      assert.equal(caps.rule("shell"), "preset:readonly");
      await assert.rejects(() => readonly.withToken("x".repeat(32)).discover(), ServerAuthError);

      const minimal = await sandbox.startServer({ policy: "minimal", timeout: 60 });
      assert.match(minimal.baseUrl, /\/_port\/9102$/);
      assert.equal((await minimal.discover()).can("files_list"), false);
      const ports = await listening(sandbox);
      for (const port of [9100, 9101, 9102, 9103]) assert.ok(ports.has(port), `${port}`);
      // The sandbox's own server is on abstract sockets where Landlock scopes them (ABI 6), on
      // TCP 9000 and 9001 elsewhere.
      const own = landlockAbi() < 6;
      assert.equal(ports.has(9000), own, "9000");
      assert.equal(ports.has(9001), own, "9001");
    },
  });

  await t.step("a server that exits at once is a ConnectionError with its exit code", async () => {
    await assert.rejects(
      () => sandbox.startServer({ command: "echo no server here; exit 3", timeout: 30 }),
      (e: Error) => e instanceof ConnectionError && /exited \(code 3\)/.test(e.message),
    );
  });

  const id = sandbox.id;
  await sandbox.kill();
  await assertNothingLeft(home, id);
});
