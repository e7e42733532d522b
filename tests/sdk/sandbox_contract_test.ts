/**
 * The Sandbox side of the contract's last differences, against real local sandboxes: unknown
 * options refused with the nearest known one, seconds that look like milliseconds refused, an
 * immutable capability set, `SANDBOX_HTTP_TIMEOUT` / `httpTimeout`, `files.write`'s batch form,
 * `files.read`'s bad options, and `SandboxNotFoundError` after a kill (here or elsewhere).
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { Sandbox, SandboxError, SandboxNotFoundError, ValidationError } from "../../sdk/mod.ts";
import { createRequest } from "../../sdk/sandbox/options.ts";
import { dropSandbarHome, useSandbarHome } from "./sandbox_helpers.ts";

const home = await useSandbarHome();
const sandbox = await Sandbox.create({ timeout: 600 });
Deno.test.afterAll(async () => {
  await sandbox.kill();
  await dropSandbarHome(home);
});

function refusedOption(option: string, nearest: string) {
  return (e: unknown) => {
    assert.ok(e instanceof ValidationError, String(e));
    assert.match(e.message, new RegExp(`unknown option '${option}'; did you mean '${nearest}'`));
    return true;
  };
}

Deno.test("unknown options are refused, naming the nearest known one", async () => {
  // Refused before anything starts: no sandbox is created or contacted.
  await assert.rejects(
    Sandbox.create({ timeoutMs: 60_000 } as never),
    (e) => refusedOption("timeoutMs", "timeout")(e) && /\(in seconds\)/.test((e as Error).message),
  );
  await assert.rejects(Sandbox.create({ env: { A: "1" } } as never), refusedOption("env", "envs"));
  await assert.rejects(
    Sandbox.connect(sandbox.id, { timeout: 5 } as never),
    refusedOption("timeout", "httpTimeout"),
  );
  await assert.rejects(Sandbox.list({ limt: 5 } as never), refusedOption("limt", "limit"));
  await assert.rejects(
    Sandbox.killById("x", { apikey: "k" } as never),
    refusedOption("apikey", "apiKey"),
  );
  await assert.rejects(
    sandbox.commands.run("echo $A", { envs: { A: "1" } } as never),
    refusedOption("envs", "env"),
  );
  await assert.rejects(
    sandbox.commands.start("true", { background: true } as never),
    /commands\.start: unknown option 'background'/,
  );
  await assert.rejects(
    sandbox.files.watch("/tmp", { recurse: true } as never),
    refusedOption("recurse", "recursive"),
  );
  await assert.rejects(
    sandbox.files.read("/etc/hostname", { encodng: "utf-8" } as never),
    refusedOption("encodng", "encoding"),
  );
  assert.throws(
    () => sandbox.serverAt(9000, { timeoutMs: 1 } as never),
    refusedOption("timeoutMs", "timeout"),
  );
});

Deno.test("a lifetime over a day is refused as probably milliseconds", async () => {
  await assert.rejects(Sandbox.create({ timeout: 300_000 }), (e) => {
    assert.ok(e instanceof ValidationError);
    assert.match(
      e.message,
      /timeout is in seconds and at most 86400 .*300000 looks like milliseconds/,
    );
    return true;
  });
  await assert.rejects(sandbox.setTimeout(600_000), /looks like milliseconds/);
});

Deno.test("requestTimeout, else httpTimeout, else SANDBOX_HTTP_TIMEOUT bounds the create call", () => {
  const before = Deno.env.get("SANDBOX_HTTP_TIMEOUT");
  try {
    Deno.env.delete("SANDBOX_HTTP_TIMEOUT");
    assert.equal(createRequest("base", {}).requestTimeout, undefined); // the provider's default
    Deno.env.set("SANDBOX_HTTP_TIMEOUT", "45");
    assert.equal(createRequest("base", {}).requestTimeout, 45);
    assert.equal(createRequest("base", { httpTimeout: 90 }).requestTimeout, 90);
    assert.equal(createRequest("base", { httpTimeout: 90, requestTimeout: 20 }).requestTimeout, 20);
    Deno.env.set("SANDBOX_HTTP_TIMEOUT", "120000");
    assert.throws(
      () => createRequest("base", {}),
      /SANDBOX_HTTP_TIMEOUT is in seconds.*milliseconds/,
    );
    Deno.env.set("SANDBOX_HTTP_TIMEOUT", "soon");
    assert.throws(
      () => createRequest("base", {}),
      /SANDBOX_HTTP_TIMEOUT must be a number of seconds/,
    );
  } finally {
    if (before === undefined) Deno.env.delete("SANDBOX_HTTP_TIMEOUT");
    else Deno.env.set("SANDBOX_HTTP_TIMEOUT", before);
  }
});

Deno.test("capabilities cannot be changed", () => {
  const caps = sandbox.capabilities as Set<string>;
  assert.ok(caps.has("shell"));
  assert.throws(() => caps.add("gpu"), TypeError);
  assert.throws(() => caps.delete("shell"), TypeError);
  assert.throws(() => caps.clear(), TypeError);
  assert.ok(sandbox.capabilities.has("shell"));
  assert.ok(!sandbox.capabilities.has("gpu"));
});

Deno.test("files.write's batch form writes every file; a bad entry writes none", async () => {
  const infos = await sandbox.files.write([
    { path: "/home/user/batch/a.txt", data: "alpha" },
    { path: "/home/user/batch/b.bin", data: new Uint8Array([0, 1, 255]) },
  ]);
  assert.deepEqual(infos.map((i) => i.name), ["a.txt", "b.bin"]);
  assert.equal(await sandbox.files.read("/home/user/batch/a.txt"), "alpha");
  assert.deepEqual(
    await sandbox.files.readBytes("/home/user/batch/b.bin"),
    new Uint8Array([0, 1, 255]),
  );

  await assert.rejects(
    sandbox.files.write([
      { path: "/home/user/batch/c.txt", data: "c" },
      { path: "/home/user/batch/d.txt", content: "d" } as never,
    ]),
    refusedOption("content", "data"),
  );
  await assert.rejects(sandbox.files.write([{ path: "", data: "x" }]), ValidationError);
  await assert.rejects(
    sandbox.files.write("/home/user/batch/e.txt", { data: "x" } as never),
    ValidationError,
  );
  const names = (await sandbox.files.list("/home/user/batch")).map((f) => f.name).sort();
  assert.deepEqual(names, ["a.txt", "b.bin"]); // nothing half-written, no "[object Object]"
  assert.equal(await sandbox.files.exists("/home/user/[object Object]"), false);
});

Deno.test("files.read with format 'bytes' or an unknown encoding raises a SandboxError", async () => {
  await sandbox.files.write("/home/user/latin.txt", new Uint8Array([0x63, 0x61, 0x66, 0xe9]));
  assert.equal(await sandbox.files.read("/home/user/latin.txt", { encoding: "latin1" }), "café");
  await assert.rejects(
    sandbox.files.read("/home/user/latin.txt", { format: "bytes" } as never),
    (e) => {
      assert.ok(e instanceof SandboxError);
      assert.ok(e instanceof ValidationError);
      assert.match(e.message, /unknown option 'format'/);
      assert.match(e.suggestion, /readBytes/);
      return true;
    },
  );
  await assert.rejects(sandbox.files.read("/home/user/latin.txt", { encoding: "klingon" }), (e) => {
    assert.ok(e instanceof ValidationError);
    assert.match(e.message, /unknown encoding "klingon"/);
    return true;
  });
});

Deno.test("after kill(), every data-plane call raises SandboxNotFoundError", async () => {
  const doomed = await Sandbox.create({ timeout: 120 });
  await doomed.files.write("/home/user/x.txt", "x");
  await doomed.kill();
  await assert.rejects(doomed.commands.run("true"), SandboxNotFoundError);
  await assert.rejects(doomed.files.read("/home/user/x.txt"), SandboxNotFoundError);
  await assert.rejects(doomed.runCode("print(1)"), SandboxNotFoundError);
  assert.equal(await doomed.isRunning(), false);
});

Deno.test("a sandbox killed by another process raises SandboxNotFoundError, not a fetch failure", async () => {
  const victim = await Sandbox.create({ timeout: 120 });
  // Use the data plane once, so that the client is made and its connection was good.
  assert.equal((await victim.commands.run("echo alive")).stdout, "alive\n");
  const script = `
    import { LocalProvider, Sandbox } from ${
    JSON.stringify(fileURLToPath(new URL("../../sdk/mod.ts", import.meta.url)))
  };
    const killed = await Sandbox.killById(Deno.args[0], { provider: new LocalProvider({ home: Deno.args[1] }) });
    if (!killed) Deno.exit(3);
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script, victim.id, home],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  assert.equal(out.code, 0);
  await assert.rejects(victim.commands.run("echo again"), (e) => {
    assert.ok(e instanceof SandboxNotFoundError, `${(e as Error).name}: ${(e as Error).message}`);
    assert.match(e.message, new RegExp(`Sandbox ${victim.id} no longer exists`));
    return true;
  });
  await assert.rejects(victim.files.list("/home/user"), SandboxNotFoundError);
  await victim.kill(); // already gone: no error
});
