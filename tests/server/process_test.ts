// The process group over real HTTP with real processes: results, timeouts that kill the whole
// group, streaming order, background start + stdin + output + signal, bounded buffers, no
// zombies, and every process gone when the server stops. Waits poll /proc with a generous
// bound; nothing here depends on tight timings.
import assert from "node:assert/strict";
import { allPids, procStat, serverPid } from "../helpers/proc.ts";
import { startTestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";

/** Gone, or at most a zombie that init has yet to reap: not running. */
function dead(pid: number): boolean {
  const st = procStat(pid);
  return st === null || st.state === "Z" || st.state === "X";
}

const groupMembers = (pgid: number) => allPids().filter((p) => procStat(p)?.pgrp === pgid);

Deno.test("shell: result, exit code, stdin, timeout that kills the group", async (t) => {
  await using server = await startTestServer();
  await t.step("stdout, stderr, exit code, execution time", async () => {
    const res = await server.post("/process/shell", { cmd: "echo out; echo err >&2; exit 7" });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.stdout, "out\n");
    assert.equal(body.stderr, "err\n");
    assert.equal(body.exit_code, 7);
    assert.equal(body.timed_out, false);
    assert.equal(typeof body.execution_time, "number");
    assert.ok(body.execution_time > 0 && body.execution_time < 60);
  });
  await t.step("stdin text is fed and closed", async () => {
    const res = await server.post("/process/shell", { cmd: "tr a-z A-Z", stdin: "hello" });
    assert.equal((await res.json()).stdout, "HELLO");
  });
  await t.step("a timeout kills the leader and its grandchildren", async () => {
    const res = await server.post("/process/shell", {
      cmd: "sleep 300 & echo $!; sleep 300",
      timeout: 1,
    });
    const body = await res.json();
    assert.equal(body.timed_out, true);
    assert.equal(body.exit_code, 124);
    assert.equal(body.signal, "SIGKILL");
    const grandchild = Number(body.stdout.trim());
    assert.ok(grandchild > 0);
    await eventually("the grandchild died", () => dead(grandchild));
    await eventually("the group is empty", () => groupMembers(body.pid).length === 0);
  });
  await t.step("a plain command (run without bash) is killed by its timeout too", async () => {
    const res = await server.post("/process/shell", { cmd: "sleep 300", timeout: 1 });
    const body = await res.json();
    assert.equal(body.timed_out, true);
    await eventually("it died", () => dead(body.pid));
    const env = await (await server.post("/process/shell", { cmd: "printenv PWD" })).json();
    assert.equal(env.stdout, `${await Deno.realPath(server.root)}\n`);
    const missing = await (await server.post("/process/shell", { cmd: "no-such-cmd-xyz" })).json();
    assert.equal(missing.exit_code, 127);
    assert.match(missing.stderr, /no-such-cmd-xyz: command not found/);
  });
  await t.step("what the leader leaves in its group dies with it", async () => {
    const res = await server.post("/process/shell", { cmd: "(sleep 300 &) ; echo started" });
    const body = await res.json();
    assert.equal(body.stdout, "started\n");
    await eventually("the group is empty", () => groupMembers(body.pid).length === 0);
  });
  await t.step("output beyond max_output_bytes is dropped from the front and counted", async () => {
    const res = await server.post("/process/shell", {
      cmd: "seq 1 10000",
      max_output_bytes: 100,
    });
    const body = await res.json();
    assert.equal(Buffer.byteLength(body.stdout), 100);
    assert.ok(body.stdout.endsWith("9999\n10000\n"));
    assert.equal(body.stdout_dropped, 48894 - 100);
  });
});

Deno.test("shell_stream: chunks in order, then exit; disconnect kills the group", async (t) => {
  await using server = await startTestServer();
  await t.step("NDJSON ProcessChunks in the order they happened", async () => {
    const res = await server.post("/process/shell/stream", {
      cmd: "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; exit 3",
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/x-ndjson");
    assert.ok(Number(res.headers.get("x-process-id")) > 0);
    const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.slice(0, 3), [
      { type: "stdout", data: "one\n", exit_code: null },
      { type: "stderr", data: "two\n", exit_code: null },
      { type: "stdout", data: "three\n", exit_code: null },
    ]);
    const exit = lines[3];
    assert.equal(lines.length, 4);
    assert.equal(exit.type, "exit");
    assert.equal(exit.exit_code, 3);
    assert.equal(exit.timed_out, false);
  });
  await t.step("the first chunk arrives while the process still runs", async () => {
    const res = await server.post("/process/shell/stream", { cmd: "echo early; sleep 300" });
    const pid = Number(res.headers.get("x-process-id"));
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    assert.equal(JSON.parse(value!.split("\n")[0]).data, "early\n");
    assert.ok(!dead(pid), "still running");
    await reader.cancel();
    await eventually("the group died after the disconnect", () => groupMembers(pid).length === 0);
  });
});

Deno.test("background: start, stdin, output, follow, signal, list", async (t) => {
  await using server = await startTestServer();
  await t.step("stdin in, output out, exit code kept", async () => {
    const start = await server.post("/process/start", {
      cmd: 'while read line; do echo "got $line"; [ "$line" = bye ] && exit 5; done',
      tag: "echoer",
    });
    assert.equal(start.status, 200);
    const info = await start.json();
    assert.equal(info.running, true);
    assert.equal(info.stdin_open, true);
    assert.equal(info.tag, "echoer");
    const w1 = await server.post(`/process/${info.pid}/stdin`, { data: "hi\n" });
    assert.deepEqual(await w1.json(), { pid: info.pid, written: 3, stdin_open: true });
    const follow = await server.fetch(`/process/${info.pid}/output?follow=true`);
    const reader = follow.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("got hi")) text += (await reader.read()).value ?? "";
    const w2 = await server.post(`/process/${info.pid}/stdin`, {
      data: btoa("bye\n"),
      encoding: "base64",
    });
    assert.equal(w2.status, 200);
    while (!text.includes('"type":"exit"')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const lines = text.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.data).join(""), "got hi\ngot bye\n");
    assert.equal(lines.at(-1).type, "exit");
    assert.equal(lines.at(-1).exit_code, 5);
    const got = await (await server.fetch(`/process/${info.pid}?wait=true&timeout=30`)).json();
    assert.equal(got.running, false);
    assert.equal(got.exit_code, 5);
    assert.equal(got.output_bytes, 15);
    const late = await server.post(`/process/${info.pid}/stdin`, { data: "x" });
    assert.equal(late.status, 409);
    assert.equal((await late.json()).code, "conflict");
  });
  await t.step("output from an offset; a small buffer says what it dropped", async () => {
    const start = await server.post("/process/start", {
      cmd: "seq 1 2000",
      buffer_bytes: 1024,
      stdin: false,
    });
    const { pid, stdin_open } = await start.json();
    assert.equal(stdin_open, false);
    const done = await (await server.fetch(`/process/${pid}?wait=true`)).json();
    assert.equal(done.exit_code, 0);
    assert.equal(done.output_bytes, 8893);
    const all = await (await server.fetch(`/process/${pid}/output`)).json();
    assert.ok(all.dropped_bytes > 0);
    assert.equal(all.dropped_bytes, all.start_offset);
    assert.equal(all.next_offset, 8893);
    const text = all.chunks.map((c: { data: string }) => c.data).join("");
    assert.ok(text.endsWith("1999\n2000\n"));
    const none = await (await server.fetch(`/process/${pid}/output?offset=8893`)).json();
    assert.deepEqual(none.chunks, []);
    assert.equal(none.dropped_bytes, 0);
  });
  await t.step("a process its timeout stops says so in its output", async () => {
    const start = await server.post("/process/start", {
      cmd: "echo serving; sleep 300",
      timeout: 0.3,
      stdin: false,
    });
    const { pid } = await start.json();
    const done = await (await server.fetch(`/process/${pid}?wait=true&timeout=30`)).json();
    assert.deepEqual([done.timed_out, done.exit_code], [true, 124]);
    const out = await (await server.fetch(`/process/${pid}/output`)).json();
    const last = out.chunks.at(-1);
    assert.equal(last.type, "stderr");
    assert.equal(
      last.data,
      "[sandbar] stopped after its timeout of 0.3 s (start it with timeout 0 for none)\n",
    );
  });
  await t.step("a signal reaches the whole group", async () => {
    const start = await server.post("/process/start", {
      cmd: "sleep 300 & echo $!; wait",
    });
    const { pid } = await start.json();
    let printed = "";
    await eventually("the grandchild's pid is printed", async () => {
      const out = await (await server.fetch(`/process/${pid}/output`)).json();
      printed = out.chunks.map((c: { data: string }) => c.data).join("");
      return printed.endsWith("\n");
    });
    const grandchild = Number(printed.trim());
    assert.ok(!dead(grandchild));
    const listed = await (await server.fetch("/process?running=true")).json();
    assert.ok(listed.processes.some((p: { pid: number }) => p.pid === pid));
    const sig = await server.post(`/process/${pid}/signal`, { signal: 15 });
    assert.deepEqual(await sig.json(), { pid, signal: "SIGTERM" });
    await eventually("the grandchild died", () => dead(grandchild));
    const got = await (await server.fetch(`/process/${pid}?wait=true`)).json();
    assert.equal(got.signal, "SIGTERM");
    assert.equal(got.exit_code, 143);
    const again = await server.post(`/process/${pid}/signal`, { signal: "SIGKILL" });
    assert.equal(again.status, 409);
    const bad = await server.post(`/process/${pid}/signal`, { signal: "SIGSEGV" });
    assert.equal((await bad.json()).code, "invalid_arguments");
  });
  await t.step("unknown pids are 404, malformed 400", async () => {
    assert.equal((await server.fetch("/process/999999999")).status, 404);
    assert.equal((await server.fetch("/process/abc")).status, 400);
  });
  await t.step("no zombie is left among the server's children", async () => {
    const pid = serverPid(server);
    await eventually(
      "no zombie children",
      () => allPids().every((p) => procStat(p)?.ppid !== pid || procStat(p)?.state !== "Z"),
    );
  });
});

Deno.test("processes belong to the identity that started them", async () => {
  const other = "other-token-0123456789abcdef";
  await using server = await startTestServer({
    policy: {
      identities: [{ id: "other", token: other, scopes: ["process:run", "process:read"] }],
    },
  });
  const { pid } = await (await server.post("/process/start", { cmd: "sleep 300" })).json();
  const res = await server.fetch(`/process/${pid}`, { token: other });
  assert.equal(res.status, 404);
  await res.body?.cancel();
  const list = await (await server.fetch("/process", { token: other })).json();
  assert.deepEqual(list.processes, []);
  const sig = await server.fetch(`/process/${pid}/signal`, { method: "POST", token: other });
  assert.equal(sig.status, 404);
  await sig.body?.cancel();
  await server.post(`/process/${pid}/signal`, { signal: 9 });
});

Deno.test("every process dies when the server stops", async () => {
  const server = await startTestServer();
  const { pid } = await (await server.post("/process/start", {
    cmd: "sleep 300 & sleep 300 & wait",
  })).json();
  await eventually("both grandchildren started", () => groupMembers(pid).length >= 3);
  const members = groupMembers(pid);
  await server.close();
  for (const p of members) await eventually(`${p} died`, () => dead(p));
});
