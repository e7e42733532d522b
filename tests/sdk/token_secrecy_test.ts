// Code running inside a local sandbox cannot find the sandbox's tokens: not in any process's
// environment or command line, not in a file, and not by reading the server's /proc entries.
import assert from "node:assert/strict";
import { Sandbox } from "../../sdk/mod.ts";
import {
  assertNothingLeft,
  dropSandbarHome,
  everythingReadableInside,
  useSandbarHome,
} from "./sandbox_helpers.ts";

const home = await useSandbarHome();

Deno.test({
  name: "the server and access tokens are not readable from inside the sandbox",
  ignore: !Deno.build.os.startsWith("linux"),
  fn: async () => {
    await using sandbox = await Sandbox.create();
    const id = sandbox.id;
    const state = JSON.parse(await Deno.readTextFile(`${home}/sandboxes/${id}/state.json`));
    const tokens: string[] = [state.serverToken, state.accessToken];
    assert.ok(tokens.every((t) => typeof t === "string" && t.length >= 16));
    const readable = await everythingReadableInside(sandbox);
    for (const token of tokens) {
      assert.ok(!readable.includes(token), "a token was found inside the sandbox");
    }
    // /proc is open inside the sandbox (SANDBAR_PROC=open: `ps` lists the server), but the
    // kernel keeps the server's environment from the sandbox's processes.
    const server = await sandbox.commands.run(
      "for p in $(pgrep -f 'main[.]ts .*--port 9000'); do echo server; " +
        "(exec 3</proc/$p/environ) 2>/dev/null && echo readable || echo closed; done",
    );
    assert.equal(server.stdout, "server\nclosed\n");
    await sandbox.kill();
    await assertNothingLeft(home, id);
  },
});

Deno.test("cleanup", async () => {
  await dropSandbarHome(home);
});
