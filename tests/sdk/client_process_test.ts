/**
 * client.process against the real server: shell, streams, background processes, stdin,
 * signals, output and follow, and the process guards' errors.
 */

import assert from "node:assert/strict";
import {
  ConflictError,
  PolicyDeniedError,
  ServerClient,
  ServerNotFoundError,
  ServerValidationError,
  TimeoutError,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("process.shell: output, exit code, argv form, cwd, env, stdin, timeout", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const r = await client.process.shell("echo hi; echo oops >&2; exit 3");
  assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.success, r.timedOut], [
    "hi\n",
    "oops\n",
    3,
    false,
    false,
  ]);
  assert.ok(r.pid !== null && r.pid > 0);
  assert.ok(r.executionTime >= 0);
  const argv = await client.process.shell(["printf", "%s|", "a b", "$HOME"]);
  assert.equal(argv.stdout, "a b|$HOME|");
  assert.ok(argv.success);
  await client.files.mkdir("sub");
  assert.equal((await client.process.shell("pwd", { cwd: "sub" })).stdout, `${server.root}/sub\n`);
  assert.equal(
    (await client.process.shell("echo $GREETING", { env: { GREETING: "yo" } })).stdout,
    "yo\n",
  );
  assert.equal((await client.process.shell("cat", { stdin: "piped" })).stdout, "piped");
  const slow = await client.process.shell("sleep 5", { timeout: 1 });
  assert.deepEqual([slow.timedOut, slow.exitCode], [true, 124]);
});

Deno.test("process.shell outlives a shorter client timeout when the command's timeout is longer", async () => {
  await using server = await startTestServer();
  // The per-request timeout is 0.5 s; the command runs about 1.5 s within its own 10 s.
  await using client = new ServerClient(server.url, { token: server.token, timeout: 0.5 });
  const r = await client.process.shell("sleep 1.5; echo done", { timeout: 10 });
  assert.equal(r.stdout, "done\n");
  // An explicit request timeout is honoured, and says which timeout it was.
  await assert.rejects(
    client.process.shell("sleep 3", { timeout: 10, requestTimeout: 0.3 }),
    (e) => {
      assert.ok(e instanceof TimeoutError);
      assert.match(e.message, /shell/);
      assert.match(e.suggestion, /timeout/);
      return true;
    },
  );
});

Deno.test("process.shellStream yields chunks then exit; runStream collects with callbacks", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const chunks = [];
  for await (const c of client.process.shellStream("echo 1; sleep 0.1; echo 2 >&2; exit 4")) {
    chunks.push(c);
  }
  const exit = chunks.at(-1)!;
  assert.equal(exit.type, "exit");
  assert.equal(exit.exitCode, 4);
  assert.equal(chunks.filter((c) => c.type === "stdout").map((c) => c.data).join(""), "1\n");
  assert.equal(chunks.filter((c) => c.type === "stderr").map((c) => c.data).join(""), "2\n");
  const out: string[] = [];
  const err: string[] = [];
  const r = await client.process.runStream("echo a; echo b >&2", {
    onStdout: (d) => out.push(d),
    onStderr: (d) => err.push(d),
  });
  assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.success], ["a\n", "b\n", 0, true]);
  assert.equal(out.join(""), "a\n");
  assert.equal(err.join(""), "b\n");
});

Deno.test("process.shellStream: leaving the loop early kills the command on the server", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  let pid: number | undefined;
  for await (const c of client.process.shellStream("echo $$; sleep 30")) {
    pid = Number(c.data.trim());
    break;
  }
  assert.ok(pid && pid > 0);
  // The server kills the group when the stream closes; poll until the process is gone.
  for (let i = 0; i < 100; i++) {
    const running = (await client.process.list({ running: true })).some((p) => p.pid === pid);
    if (!running) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(!(await client.process.list({ running: true })).some((p) => p.pid === pid));
});

Deno.test("process: start, list, get, sendStdin, closeStdin, output, follow, wait", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const p = await client.process.start("while read line; do echo got:$line; done; echo bye", {
    tag: "echoer",
  });
  assert.equal(p.running, true);
  assert.equal(p.kind, "background");
  assert.equal(p.tag, "echoer");
  assert.ok(p.startedAt instanceof Date);
  assert.ok((await client.process.list()).some((x) => x.pid === p.pid));
  const w = await client.process.sendStdin(p.pid, "one\n");
  assert.deepEqual(w, { pid: p.pid, written: 4, stdinOpen: true });
  await client.process.sendStdin(p.pid, new TextEncoder().encode("two\n"));
  await client.process.closeStdin(p.pid);
  const done = await client.process.wait(p.pid, { timeout: 20 });
  assert.deepEqual([done.running, done.exitCode], [false, 0]);
  const out = await client.process.output(p.pid);
  assert.equal(out.chunks.map((c) => c.data).join(""), "got:one\ngot:two\nbye\n");
  assert.equal(out.running, false);
  const again = await client.process.output(p.pid, { offset: out.nextOffset });
  assert.deepEqual(again.chunks, []);
  const followed = [];
  for await (const c of client.process.follow(p.pid)) followed.push(c);
  assert.equal(followed.at(-1)?.type, "exit");
  assert.equal(followed.at(-1)?.exitCode, 0);
  assert.equal(
    followed.filter((c) => c.type === "stdout").map((c) => c.data).join(""),
    "got:one\ngot:two\nbye\n",
  );
  await assert.rejects(client.process.sendStdin(p.pid, "late"), ConflictError);
  await assert.rejects(client.process.get(999_999_999), ServerNotFoundError);
});

Deno.test("process: follow a running process live; terminate, kill and signal", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const p = await client.process.start("for i in 1 2 3; do echo $i; sleep 0.2; done; sleep 30");
  const seen: string[] = [];
  for await (const c of client.process.follow(p.pid)) {
    seen.push(c.data);
    if (seen.join("").includes("3\n")) break;
  }
  assert.equal(seen.join(""), "1\n2\n3\n");
  const sent = await client.process.terminate(p.pid);
  assert.deepEqual(sent, { pid: p.pid, signal: "SIGTERM" });
  const ended = await client.process.wait(p.pid, { timeout: 20 });
  assert.equal(ended.signal, "SIGTERM");
  assert.equal(ended.exitCode, 128 + 15);
  await assert.rejects(client.process.kill(p.pid), ConflictError);
  const q = await client.process.start("sleep 30");
  await client.process.signal(q.pid, "KILL");
  assert.equal((await client.process.wait(q.pid, { timeout: 20 })).signal, "SIGKILL");
  const r = await client.process.start("sleep 30");
  await assert.rejects(client.process.wait(r.pid, { timeout: 1 }), TimeoutError);
  await client.process.kill(r.pid);
});

Deno.test("process: the command and environment guards raise their errors", async () => {
  await using server = await startTestServer({ policy: { deny_commands: ["rm"] } });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.process.shell("echo ok && rm -rf x"), (e) => {
    assert.ok(e instanceof PolicyDeniedError);
    assert.equal(e.serverCode, "command_not_allowed");
    assert.equal(e.endpoint, "shell");
    return true;
  });
  await assert.rejects(client.process.shell("true", { env: { LD_PRELOAD: "/x.so" } }), (e) => {
    assert.ok(e instanceof PolicyDeniedError);
    assert.equal(e.serverCode, "env_var_denied");
    return true;
  });
  await assert.rejects(client.process.shell("   "), (e) => {
    assert.ok(e instanceof ServerValidationError);
    assert.equal(e.serverCode, "command_invalid");
    return true;
  });
  await assert.rejects(client.process.start([""]), (e) => {
    assert.ok(e instanceof ServerValidationError);
    assert.equal(e.serverCode, "process_invalid");
    return true;
  });
  await assert.rejects(client.process.shell("pwd", { cwd: "/etc" }), (e) => {
    assert.equal((e as PolicyDeniedError).serverCode, "path_not_allowed");
    return true;
  });
});
