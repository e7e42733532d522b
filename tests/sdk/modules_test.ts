/**
 * The `commands`, `files`, `network` and `code` modules against one real local sandbox.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  NotFoundError,
  type ProcessChunk,
  ProviderFeatureNotSupportedError,
  Sandbox,
  ServerNotFoundError,
  ServerValidationError,
  ValidationError,
} from "../../sdk/mod.ts";
import { dropSandbarHome, useSandbarHome } from "./sandbox_helpers.ts";

const home = await useSandbarHome();
const sandbox = await Sandbox.create({ timeout: 900 });
Deno.test.afterAll(async () => {
  await sandbox.kill();
  await dropSandbarHome(home);
});

Deno.test("commands.run: output, exit codes, env, cwd, timeout", async () => {
  const r = await sandbox.commands.run("echo out; echo err >&2; exit 3");
  assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.success], ["out\n", "err\n", 3, false]);
  const env = await sandbox.commands.run("echo $A-$B", { env: { A: "1", B: "2" } });
  assert.equal(env.stdout, "1-2\n");
  await sandbox.files.makeDir("/home/user/work");
  assert.equal(
    (await sandbox.commands.run("pwd", { cwd: "/home/user/work" })).stdout,
    "/home/user/work\n",
  );
  const slow = await sandbox.commands.run("sleep 5", { timeout: 1 });
  assert.equal(slow.exitCode, 124);
  assert.equal(slow.timedOut, true);
  const seen: string[] = [];
  const live = await sandbox.commands.run("echo a; sleep 0.1; echo b", {
    onStdout: (d) => void seen.push(d),
  });
  assert.equal(live.stdout, "a\nb\n");
  assert.equal(seen.join(""), "a\nb\n");
  await assert.rejects(
    () => sandbox.commands.run("id", { user: "nobody" }),
    ProviderFeatureNotSupportedError,
  );
});

Deno.test("commands.stream yields chunks in order and ends with exit", async () => {
  const chunks: ProcessChunk[] = [];
  for await (const c of sandbox.commands.stream("for i in 1 2 3; do echo $i; sleep 0.05; done")) {
    chunks.push(c);
  }
  const out = chunks.filter((c) => c.type === "stdout").map((c) => c.data).join("");
  assert.equal(out, "1\n2\n3\n");
  assert.equal(chunks.at(-1)?.type, "exit");
  assert.equal(chunks.at(-1)?.exitCode, 0);
});

Deno.test("commands.start, connect from a handle, stdin, signals, list, kill", async () => {
  const cat = await sandbox.commands.start("cat");
  await sandbox.commands.sendInput(cat.pid, "hello\n");
  await cat.sendInput("world\n");
  await cat.closeStdin();
  const result = await sandbox.commands.connect(cat.pid).wait();
  assert.equal(result.stdout, "hello\nworld\n");
  assert.equal(result.exitCode, 0);

  const sleeper = await sandbox.commands.run("sleep 60", { background: true, timeout: 0 });
  assert.ok((await sandbox.commands.list()).some((p) => p.pid === sleeper.pid));
  // Only 15 and 9, refused before any request.
  await assert.rejects(() => sandbox.commands.sendSignal(sleeper.pid, 2), ValidationError);
  await sandbox.commands.sendSignal(sleeper.pid); // 15
  const ended = await sleeper.wait();
  assert.equal(ended.signal, "SIGTERM");
  assert.ok(!(await sandbox.commands.list()).some((p) => p.pid === sleeper.pid));

  const other = await sandbox.commands.start("sleep 60", { timeout: 0 });
  await sandbox.commands.kill(other.pid);
  assert.equal((await other.wait()).signal, "SIGKILL");
  await assert.rejects(() => sandbox.commands.kill(999_999), ServerNotFoundError);
});

Deno.test("files: text and bytes, list, exists, makeDir, move, rename, remove, getInfo", async () => {
  const all = new Uint8Array(256).map((_, i) => i);
  await sandbox.files.write("/home/user/f/bytes.bin", all);
  assert.deepEqual(await sandbox.files.readBytes("/home/user/f/bytes.bin"), all);
  await sandbox.files.write("f/text.txt", "héllo\n");
  assert.equal(await sandbox.files.read("f/text.txt"), "héllo\n");
  await sandbox.files.write("f/latin1.txt", new Uint8Array([0x63, 0x61, 0x66, 0xe9]));
  assert.equal(await sandbox.files.read("f/latin1.txt", { encoding: "latin1" }), "café");
  assert.deepEqual(
    (await sandbox.files.list("/home/user/f")).map((e) => [e.name, e.type, e.size]),
    [["bytes.bin", "file", 256], ["latin1.txt", "file", 4], ["text.txt", "file", 7]],
  );
  assert.equal(await sandbox.files.makeDir("f/a/b"), true);
  assert.equal(await sandbox.files.makeDir("f/a/b"), false);
  await sandbox.files.move("f/text.txt", "f/a/b/moved.txt");
  await sandbox.files.rename("f/a/b/moved.txt", "f/a/b/renamed.txt");
  assert.equal(await sandbox.files.exists("f/text.txt"), false);
  const info = await sandbox.files.getInfo("f/a/b/renamed.txt");
  assert.deepEqual([info.path, info.type, info.size], ["/home/user/f/a/b/renamed.txt", "file", 7]);
  await sandbox.files.remove("/home/user/f");
  assert.equal(await sandbox.files.exists("/home/user/f"), false);
  await assert.rejects(() => sandbox.files.read("/home/user/f/none"), (e) => {
    assert.ok(e instanceof NotFoundError); // a ServerNotFoundError is also a NotFoundError
    return true;
  });
});

Deno.test("files.watch is in place when it resolves and reports changes", async () => {
  await sandbox.files.makeDir("/home/user/watched");
  await using watch = await sandbox.files.watch("/home/user/watched");
  await sandbox.commands.run("echo 1 > /home/user/watched/a.txt; mkdir /home/user/watched/sub");
  const wanted = ["create /home/user/watched/a.txt", "create /home/user/watched/sub"];
  const seen: string[] = [];
  const timer = setTimeout(() => watch.stop(), 10_000);
  for await (const e of watch) {
    seen.push(`${e.type} ${e.path}`);
    if (wanted.every((w) => seen.includes(w))) break;
  }
  clearTimeout(timer);
  assert.ok(wanted.every((w) => seen.includes(w)), seen.join(", "));
  // collect() gathers a count of events, then stops.
  await using second = await sandbox.files.watch("/home/user/watched/sub");
  await sandbox.files.write("/home/user/watched/sub/b.txt", "b");
  const events = await second.collect(1, 10);
  assert.equal(events.length, 1);
  assert.match(events[0].path, /^\/home\/user\/watched\/sub\//);
});

Deno.test("files.upload and download stream 100 MB byte-exact", async () => {
  const dir = await Deno.makeTempDir();
  const local = `${dir}/big.bin`;
  const back = `${dir}/back.bin`;
  const size = 100 * 1024 * 1024;
  const hash = createHash("sha256");
  const file = await Deno.open(local, { write: true, create: true });
  const chunk = new Uint8Array(1024 * 1024);
  for (let written = 0; written < size; written += chunk.length) {
    for (let i = 0; i < chunk.length; i += 65536) {
      crypto.getRandomValues(chunk.subarray(i, i + 65536));
    }
    hash.update(chunk);
    await file.write(chunk);
  }
  file.close();
  const expected = hash.digest("hex");
  try {
    const info = await sandbox.files.upload(local, "/home/user/big.bin");
    assert.equal(info.size, size);
    const inside = await sandbox.commands.run("sha256sum /home/user/big.bin");
    assert.equal(inside.stdout.split(" ")[0], expected);
    await sandbox.files.download("/home/user/big.bin", back);
    const got = createHash("sha256");
    for await (const part of (await Deno.open(back)).readable) got.update(part);
    assert.equal(got.digest("hex"), expected);
    assert.equal((await Deno.stat(back)).size, size);
  } finally {
    await sandbox.files.remove("/home/user/big.bin").catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("network: hosts and URLs are computed locally", () => {
  const gateway = new URL(sandbox.url);
  assert.equal(sandbox.network.getHost(3000), `3000-${sandbox.id}.localhost:${gateway.port}`);
  assert.equal(sandbox.network.getUrl(3000), `http://3000-${sandbox.id}.localhost:${gateway.port}`);
  assert.deepEqual(sandbox.network.getAccessHeaders(), {
    "X-Access-Token": sandbox.info.envdAccessToken,
  });
  assert.throws(() => sandbox.network.getHost(0), ValidationError);
  assert.equal(
    sandbox.files.downloadUrl("a b.txt"),
    `${sandbox.url}/files?path=a+b.txt`,
  );
});

Deno.test("code: languages, failures, timeouts", async () => {
  const py = await sandbox.runCode("import sys; print(6 * 7); print('warn', file=sys.stderr)");
  assert.deepEqual([py.text, py.stderr, py.exitCode], ["42", "warn\n", 0]);
  const js = await sandbox.code.run("console.log([1, 2, 3].map((x) => x * 2).join(','))", {
    language: "javascript",
  });
  assert.equal(js.text, "2,4,6");
  const failed = await sandbox.runCode("raise ValueError('boom')");
  assert.notEqual(failed.exitCode, 0);
  assert.match(failed.stderr, /ValueError: boom/);
  const slow = await sandbox.runCode("import time; time.sleep(5)", { timeout: 1 });
  assert.equal(slow.exitCode, 124);
  const outputs: string[] = [];
  await sandbox.runCode("print('x'); 6 * 7", {
    onStdout: (d) => void outputs.push(`out:${d}`),
    onResult: (r) => void outputs.push(`result:${r.text}`),
  });
  assert.deepEqual(outputs, ["out:x\n", "result:42"]);
});

Deno.test("code contexts: a working directory, environment and language; state kept", async () => {
  await sandbox.files.makeDir("/home/user/project");
  const ctx = await sandbox.code.createContext({
    language: "bash",
    cwd: "/home/user/project",
    envs: { STAGE: "ctx" },
  });
  assert.match(ctx.id, /^ctx_[0-9a-f]{12}$/);
  const r = await sandbox.code.run("echo $STAGE $(pwd); echo kept > file.txt; X=1", {
    contextId: ctx.id,
  });
  assert.equal(r.stdout, "ctx /home/user/project\n");
  assert.equal(await sandbox.files.read("/home/user/project/file.txt"), "kept\n");
  // A context is a live shell: variables persist between runs.
  const again = await sandbox.code.run("echo ${X:-unset}", { contextId: ctx.id });
  assert.equal(again.stdout, "1\n");
  await assert.rejects(
    () => sandbox.code.run("print(1)", { contextId: ctx.id, language: "python" }),
    ServerValidationError,
  );

  const listed = await sandbox.code.listContexts();
  assert.ok(listed.some((c) => c.id === ctx.id));
  const restarted = await sandbox.code.restartContext(ctx.id);
  assert.ok(restarted.restartedAt);
  const fresh = await sandbox.code.run("echo ${X:-unset}", { contextId: ctx.id });
  assert.equal(fresh.stdout, "unset\n");
  await sandbox.code.removeContext(ctx.id);
  assert.ok(!(await sandbox.code.listContexts()).some((c) => c.id === ctx.id));
  await assert.rejects(() => sandbox.code.run("true", { contextId: ctx.id }), NotFoundError);
  await assert.rejects(() => sandbox.code.run("true", { contextId: "../x" }), ValidationError);
});
