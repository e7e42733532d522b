// The sandbox command line from a shell: list (what Sandbox.list() returns), exec, logs, kill,
// run as a separate process on the same sandbox home as the test's own Sandbox calls.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Sandbox } from "../../sdk/mod.ts";
import { assertNothingLeft, dropSandbarHome, useSandbarHome } from "./sandbox_helpers.ts";

const CLI = fileURLToPath(new URL("../../sdk/cli.ts", import.meta.url));
const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

async function cli(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    env: { SANDBAR_HOME: home },
    stdin: "null",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("the package exports the sandbox CLI as @sandbar/sandbar/cli", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.equal(config.exports["./cli"], "./sdk/cli.ts");
  const help = await cli("--help");
  assert.equal(help.code, 0);
  for (const command of ["list", "exec", "connect", "logs", "kill"]) {
    assert.match(help.stdout, new RegExp(`^  ${command} `, "m"), command);
  }
  const typo = await cli("lst");
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /unknown command lst; did you mean list\?/);
});

Deno.test("list, exec, logs and kill from a shell act on the sandboxes Sandbox.list() sees", async () => {
  const sandbox = await Sandbox.create({ metadata: { owner: "cli-test" } });
  try {
    const listed = await cli("list");
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ID +STATUS +TEMPLATE +STARTED +ENDS +METADATA$/m);
    assert.match(listed.stdout, new RegExp(`^${sandbox.id} +running +base .*owner=cli-test$`, "m"));
    const json = await cli("list", "--json");
    const api = await Sandbox.list();
    assert.deepEqual(JSON.parse(json.stdout), JSON.parse(JSON.stringify(api)));

    const hi = await cli("exec", sandbox.id, "echo", "hi;", "echo", "oops", ">&2;", "exit", "3");
    assert.equal(hi.code, 3);
    assert.equal(hi.stdout, "hi\n");
    assert.equal(hi.stderr, "oops\n");

    const logs = await cli("logs", sandbox.id);
    assert.equal(logs.code, 0, logs.stderr);

    const killed = await cli("kill", sandbox.id);
    assert.deepEqual([killed.code, killed.stdout], [0, `killed ${sandbox.id}\n`]);
    assert.equal((await Sandbox.list()).some((s) => s.sandboxId === sandbox.id), false);
    const again = await cli("kill", sandbox.id);
    assert.equal(again.code, 1);
    assert.match(again.stderr, new RegExp(`no sandbox ${sandbox.id}`));
    await assertNothingLeft(home, sandbox.id);
  } finally {
    await sandbox.kill();
  }
});

Deno.test("connect without a terminal says to use exec", async () => {
  const { code, stderr } = await cli("connect", "sbx_nope");
  assert.equal(code, 2);
  assert.match(stderr, /connect needs a terminal on stdin; use exec ID CMD/);
});
