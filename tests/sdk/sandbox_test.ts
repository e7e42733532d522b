/**
 * The Sandbox API against real local sandboxes: properties, `await using`, validation, named
 * commands, the `code` capability gate (E3004), a provider without an HTTP data plane (E8004),
 * terminals, `startServer`, and the access token's narrow rights.
 */

import { type CapabilitiesDocumentLike, capabilityNames } from "../../shared/capability_names.ts";
import assert from "node:assert/strict";
import {
  CapabilityNotSupportedError,
  CommandNotFoundError,
  EndpointNotAvailableError,
  LocalProvider,
  ProviderFeatureNotSupportedError,
  registerProvider,
  Sandbox,
  type SandboxHandle,
  type SandboxProvider,
  SandboxStatus,
  ServerAuthError,
  ValidationError,
} from "../../sdk/mod.ts";
import {
  assertNothingLeft,
  dropSandbarHome,
  sandboxDirs,
  useSandbarHome,
} from "./sandbox_helpers.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

Deno.test("await using kills the sandbox on scope exit", async () => {
  let id: string;
  {
    await using sandbox = await Sandbox.create();
    id = sandbox.id;
    assert.equal(sandbox.status, SandboxStatus.RUNNING);
    assert.ok(await sandbox.isRunning());
    for (const c of ["code", "commands", "files", "ports", "shell", "terminal"]) {
      assert.ok(sandbox.capabilities.has(c), `missing ${c}`);
    }
    const info = sandbox.info;
    assert.equal(info.template, "base");
    assert.equal(info.provider, "local");
    assert.equal(info.envdUrl, sandbox.url);
    assert.ok(info.envdAccessToken);
    assert.ok(info.endAt!.getTime() - info.startedAt!.getTime() === 300_000);
  }
  assert.ok(!sandboxDirs(home).includes(id));
  await assertNothingLeft(home, id);
});

Deno.test("bad options are refused before anything starts", async () => {
  const before = sandboxDirs(home).length;
  await assert.rejects(
    () => Sandbox.create({ metadata: { n: 1 as unknown as string } }),
    ValidationError,
  );
  await assert.rejects(() => Sandbox.create({ envs: { "A-B": "x" } }), ValidationError);
  await assert.rejects(() => Sandbox.create({ envs: { SANDBAR_X: "x" } }), ValidationError);
  await assert.rejects(() => Sandbox.create({ cpu: 0 }), ValidationError);
  await assert.rejects(() => Sandbox.create({ provider: "nowhere" }), ValidationError);
  await assert.rejects(
    () => Sandbox.create({ policy: { paths: { allow: "/" } } }),
    /Invalid policy: .*paths\.allow/,
  );
  await assert.rejects(() => Sandbox.create({ policy: { bogus: 1 } }), /unknown key "bogus"/);
  // Every mistake at once, by key path: never a line of the policy.json the caller never saw.
  await assert.rejects(
    () => Sandbox.create({ policy: { audit: "sometimes", paths: { symlinks: "maybe" } } }),
    (e: ValidationError) => {
      assert.match(e.message, /\baudit: /);
      assert.match(e.message, /\bpaths\.symlinks: /);
      assert.doesNotMatch(e.message, /policy:\d+:\d+/);
      assert.doesNotMatch(e.suggestion ?? "", /README/);
      assert.match(e.suggestion ?? "", /docs\/server\/policy_reference\.md/);
      return true;
    },
  );
  // A credential means nothing to the local provider: refused, not dropped.
  await assert.rejects(() => Sandbox.create({ apiKey: "e2b_123" }), (e: ValidationError) => {
    assert.match(e.message, /local provider takes no credentials; apiKey means nothing to it/);
    assert.match(e.suggestion, /Leave out apiKey, or name the provider it is for/);
    return true;
  });
  await assert.rejects(() => Sandbox.list({ apiKey: "e2b_123" }), ValidationError);
  await assert.rejects(() => Sandbox.list({ limit: 0 }), ValidationError);
  await assert.rejects(
    () => Sandbox.list({ status: "sleeping" as SandboxStatus }),
    ValidationError,
  );
  assert.equal(sandboxDirs(home).length, before);
});

Deno.test("envs reach every process; list filters and pages", async () => {
  await using a = await Sandbox.create({ envs: { GREETING: "hi" }, metadata: { n: "1" } });
  await using b = await Sandbox.create({ metadata: { n: "2" } });
  assert.equal((await a.commands.run("echo $GREETING")).stdout, "hi\n");
  assert.equal((await b.commands.run("echo ${GREETING:-none}")).stdout, "none\n");
  const all = await Sandbox.list();
  assert.deepEqual(all.filter((i) => [a.id, b.id].includes(i.sandboxId)).map((i) => i.metadata.n), [
    "1",
    "2",
  ]);
  await b.pause();
  const paused = await Sandbox.list({ status: "paused" });
  assert.deepEqual(paused.map((i) => i.sandboxId), [b.id]);
  const page = await Sandbox.list({ limit: 1, offset: 1 });
  assert.equal(page.length, 1);
  await b.resume();
});

Deno.test("named commands: listCommands and run, CommandNotFoundError", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/commands.ts`;
  await Deno.writeTextFile(
    file,
    `export default function (commands: any) {
      commands.register("greet", {
        description: "Say hello",
        args: { name: { type: "string", required: true } },
      }, ({ name }: { name: string }) => "hello " + name);
    }`,
  );
  try {
    await using sandbox = await Sandbox.create({ commandsFile: file });
    const listed = await sandbox.listCommands();
    assert.deepEqual(listed.map((c) => c.name), ["greet"]);
    assert.equal(await sandbox.run("greet", { name: "sandbar" }), "hello sandbar");
    await assert.rejects(() => sandbox.run("nope"), CommandNotFoundError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("E3004: a sandbox whose policy turns run_code off has no code capability", async () => {
  await using sandbox = await Sandbox.create({ policy: { endpoints: { run_code: false } } });
  assert.ok(!sandbox.capabilities.has("code"));
  assert.ok(sandbox.capabilities.has("shell"));
  // What the server's listening line named is what its capabilities document says.
  const doc = await sandbox.server.transport.json<CapabilitiesDocumentLike>("capabilities");
  assert.deepEqual([...sandbox.capabilities].sort(), [...capabilityNames(doc), "ports"].sort());
  for (
    const call of [
      () => sandbox.runCode("print(1)"),
      () => sandbox.code.run("print(1)"),
      () => sandbox.code.createContext(),
      () => sandbox.code.listContexts(),
    ]
  ) {
    await assert.rejects(call, (e) => {
      assert.ok(e instanceof CapabilityNotSupportedError);
      assert.equal((e as CapabilityNotSupportedError).code, "E3004");
      return true;
    });
  }
  // The server agrees: calling the endpoint directly is refused as off (also an E3004 class).
  await assert.rejects(() => sandbox.server.devtools.runCode("print(1)"), (e) => {
    assert.ok(e instanceof EndpointNotAvailableError);
    assert.ok(e instanceof CapabilityNotSupportedError);
    return true;
  });
});

/**
 * A provider that manages lifecycle only: its sandboxes have no HTTP data plane (as with a
 * control plane whose sandboxes run no sandbar server). Registered like any other provider.
 */
class LifecycleOnlyProvider implements SandboxProvider {
  readonly name = "lifecycle-only";
  readonly #local = new LocalProvider({ home });
  #strip(handle: SandboxHandle): SandboxHandle {
    return { ...handle, serverToken: null, portAddress: null, serverCommand: null };
  }
  async create(r: Parameters<SandboxProvider["create"]>[0]) {
    return this.#strip(await this.#local.create(r));
  }
  async connect(id: string) {
    return this.#strip(await this.#local.connect(id));
  }
  getInfo = (id: string) => this.#local.getInfo(id);
  list = (q: Parameters<SandboxProvider["list"]>[0]) => this.#local.list(q);
  kill = (id: string) => this.#local.kill(id);
  setTimeout = (id: string, s: number) => this.#local.setTimeout(id, s);
  pause = (id: string) => this.#local.pause(id);
  resume = (id: string) => this.#local.resume(id);
}

Deno.test("E8004: listCommands and run on a provider without an HTTP data plane", async () => {
  registerProvider("lifecycle-only", () => new LifecycleOnlyProvider());
  await using sandbox = await Sandbox.create({ provider: "lifecycle-only" });
  assert.equal(sandbox.provider, "lifecycle-only");
  for (const call of [() => sandbox.listCommands(), () => sandbox.run("greet")]) {
    await assert.rejects(call, (e) => {
      assert.ok(e instanceof ProviderFeatureNotSupportedError);
      assert.equal((e as ProviderFeatureNotSupportedError).code, "E8004");
      return true;
    });
  }
  assert.throws(() => sandbox.server, ProviderFeatureNotSupportedError);
  await assert.rejects(() => sandbox.commands.run("true"), ProviderFeatureNotSupportedError);
  // Lifecycle still works through the provider.
  await sandbox.setTimeout(60);
  assert.equal((await sandbox.refreshInfo()).status, "running");
});

Deno.test("getTerminal: a real terminal; closing it closes the shell", async () => {
  await using sandbox = await Sandbox.create();
  const term = await sandbox.getTerminal({ cols: 100, rows: 30 });
  assert.equal(term.terminal.cols, 100);
  term.send("stty size; echo $((6 * 7))\r");
  await term.expect("30 100");
  await term.expect("42");
  await term.close();
  const open = (await sandbox.server.pty.list()).filter((t) => t.status === "running");
  assert.deepEqual(open, []);
});

// The second server runs confined by the first; Deno needs /proc/self/maps to transpile it,
// which the sandbox's open /proc gives.
Deno.test("startServer: a second server with its own policy and token", async () => {
  await using sandbox = await Sandbox.create();
  assert.equal(await sandbox.startServer(), sandbox.server); // 9000 is its own, already up
  const readonly = await sandbox.startServer({ port: 9100, policy: "readonly", timeout: 60 });
  assert.ok(await readonly.health());
  const caps = await readonly.discover();
  assert.equal(caps.can("files_list"), true);
  assert.equal(caps.can("shell"), false);
  assert.equal(caps.rule("shell"), "preset:readonly");
  await assert.rejects(() => readonly.withToken("x".repeat(32)).discover(), ServerAuthError);
  const procs = await sandbox.commands.list();
  assert.ok(procs.some((p) => p.argv?.includes("9100")));
});

Deno.test("the access token is the gateway's and can only read and write files", async () => {
  await using sandbox = await Sandbox.create();
  const access = { "X-Access-Token": sandbox.info.envdAccessToken! };
  assert.equal((await fetch(`${sandbox.url}/health`)).status, 401); // the gateway's refusal
  await sandbox.files.write("/home/user/shared.txt", "via url");
  const down = await fetch(sandbox.files.downloadUrl("/home/user/shared.txt"), { headers: access });
  assert.equal(await down.text(), "via url");
  const up = await fetch(sandbox.files.uploadUrl("/home/user/up.bin"), {
    method: "POST",
    headers: access,
    body: new Uint8Array([0, 255, 1]),
  });
  assert.equal(up.status, 200, await up.text());
  assert.deepEqual(await sandbox.files.readBytes("up.bin"), new Uint8Array([0, 255, 1]));
  const shell = await fetch(`${sandbox.url}/process/shell`, {
    method: "POST",
    headers: { ...access, "content-type": "application/json" },
    body: JSON.stringify({ cmd: "id" }),
  });
  assert.equal(shell.status, 403);
  assert.equal((await shell.json()).code, "missing_scope");
});

Deno.test("a TypeScript program runs with deno inside the sandbox, and ps sees it", async () => {
  await using sandbox = await Sandbox.create();
  // Not in any cache: Deno transpiles it inside the confinement, which needs /proc/self/maps.
  await sandbox.files.write(
    "/home/user/hello.ts",
    "const n: number = 6 * 7;\nconsole.log(`answer ${n}`);\n",
  );
  const run = await sandbox.commands.run("deno run hello.ts");
  assert.equal(run.stdout, "answer 42\n");
  // Until the forked child has run exec, ps names the shell that forked it: ask again briefly.
  const ps = await sandbox.commands.run(
    'sleep 30 & for i in $(seq 50); do a=$(ps -o args= -p $!); [ "$a" = "sleep 30" ] && break; ' +
      'sleep 0.1; done; echo "$a"; kill $!',
  );
  assert.equal(ps.stdout, "sleep 30\n");
});

Deno.test("the sandbox's /tmp takes new files; the package the server runs from cannot be changed", async () => {
  await using sandbox = await Sandbox.create();
  // From a checkout the package is bound read-only into the sandbox at its own path, maybe under
  // /tmp (a CI clone): its read-only rule must not keep /tmp from taking new files.
  const pkg = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
  const r = await sandbox.commands.run(
    `touch /tmp/new-file && echo tmp-ok; echo x >> ${pkg}/deno.json 2>/dev/null || echo pkg-refused`,
  );
  assert.equal(r.stdout, "tmp-ok\npkg-refused\n");
});
