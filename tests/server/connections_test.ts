// The request-head timeout and the connection cap: idle connections (never a byte, or a head
// dripped and never finished) used to stay open for ever, and about a thousand of them left the
// server without descriptors, after which it stopped accepting at all. Detected by /health
// answering within a deadline while hundreds of idle sockets are open, by the server closing
// each of them, and by its descriptor count coming back down. Loopback only, bounded counts.
import assert from "node:assert/strict";
import {
  closeAll,
  startServerWithFewDescriptors,
  startTestServer,
  type TestServer,
} from "../helpers/server.ts";

const HEAD_TIMEOUT_MS = 1500;
const MAX_CONNECTIONS = 64;

async function withServer(fn: (server: TestServer, port: number) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-conns-" });
  await Deno.mkdir(`${root}/w`);
  try {
    await using server = await startTestServer({
      root,
      env: {
        SANDBAR_HEAD_TIMEOUT_MS: String(HEAD_TIMEOUT_MS),
        SANDBAR_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      },
      args: ["--no-narrow"],
    });
    await fn(server, Number(new URL(server.url).port));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

/** A deadline far above the head timeout: a server that never closes fails, not hangs. */
const CLOSE_DEADLINE_MS = 30_000;

/** Resolves when the server has closed the connection (EOF or reset). */
async function closedByServer(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), CLOSE_DEADLINE_MS);
  try {
    while ((await conn.read(buf)) !== null) { /* an error answer, then the close */ }
  } catch (e) {
    if (e instanceof Deno.errors.BadResource) {
      throw new Error(`the server did not close an idle connection in ${CLOSE_DEADLINE_MS} ms`);
    }
    /* reset */
  } finally {
    clearTimeout(timer);
  }
  conn.close();
}

async function health(server: TestServer): Promise<void> {
  const res = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: "ok" });
}

async function socketCount(pid: number): Promise<number> {
  let n = 0;
  for await (const e of Deno.readDir(`/proc/${pid}/fd`)) {
    try {
      if ((await Deno.readLink(`/proc/${pid}/fd/${e.name}`)).startsWith("socket:")) n++;
    } catch { /* closed meanwhile */ }
  }
  return n;
}

Deno.test("connections: idle and dripping sockets are closed, /health keeps answering", async () => {
  await withServer(async (server, port) => {
    const sockets = await socketCount(server.pid);
    const encoder = new TextEncoder();
    const idle: Deno.Conn[] = [];
    // Never a byte.
    for (let i = 0; i < 300; i++) idle.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    // A head started and never finished (slowloris), on both ports' kinds of request.
    for (let i = 0; i < 100; i++) {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      await c.write(encoder.encode("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "));
      idle.push(c);
    }
    // Keep-alive: one request answered, then silence.
    for (let i = 0; i < 20; i++) {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      await c.write(encoder.encode("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
      const buf = new Uint8Array(1024);
      assert.match(new TextDecoder().decode(buf.subarray(0, (await c.read(buf))!)), /200 OK/);
      idle.push(c);
    }
    await health(server);
    // Every one of them is closed by the server (over the cap at once, the rest on time-out).
    await Promise.all(idle.map(closedByServer));
    await health(server);
    assert.ok((await socketCount(server.pid)) <= sockets + 4);
  });
});

Deno.test("connections: a request still running is never cut by the head timeout", async () => {
  await withServer(async (server, port) => {
    // A silent shell command and a watch stream, both older than the head timeout by the end.
    const shell = server.fetch("/process/shell", {
      method: "POST",
      body: JSON.stringify({ cmd: `sleep ${(HEAD_TIMEOUT_MS * 3) / 1000}; echo done` }),
    });
    const watch = await server.fetch("/files/watch?path=w");
    assert.equal(watch.status, 200);
    const reader = watch.body!.pipeThrough(new TextDecoderStream()).getReader();
    assert.match((await reader.read()).value!, /"start"/);
    // An idle socket opened after both: once the server has closed it, both are older than the
    // timeout, and must still be alive.
    const idle = await Deno.connect({ hostname: "127.0.0.1", port });
    await closedByServer(idle);
    await Deno.writeTextFile(`${server.root}/w/after.txt`, "x");
    let text = "";
    while (!text.includes("after.txt")) {
      const { value, done } = await reader.read();
      assert.ok(!done, "the watch stream was cut");
      text += value;
    }
    await reader.cancel();
    const res = await shell;
    assert.equal(res.status, 200);
    assert.equal((await res.json()).stdout, "done\n");
  });
});

Deno.test("connections: a download the client pauses past the head timeout is not cut", async () => {
  await withServer(async (server, port) => {
    const size = 64 * 1024 * 1024;
    {
      using file = await Deno.open(`${server.root}/w/big.bin`, { write: true, create: true });
      await file.truncate(size);
    }
    const res = await server.fetch("/files?path=w/big.bin");
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let got = (await reader.read()).value!.byteLength;
    // Paused until an idle socket opened after it has been closed by the server.
    await closedByServer(await Deno.connect({ hostname: "127.0.0.1", port }));
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      got += value.byteLength;
    }
    assert.equal(got, size);
  });
});

Deno.test("connections: a server out of descriptors sheds idle ones and listens again", async () => {
  // A hard limit of 256 descriptors (bash's `ulimit -n` sets both), and more idle connections
  // than that: Deno.serve's accept loop fails with EMFILE, which used to leave the server deaf.
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-emfile-" });
  await using server = await startServerWithFewDescriptors(
    ["--port", "0", "--pty-port", "0", "--root", root],
    { SVC_SERVER_TOKEN: "emfile-token-0123456789abcdef" },
  );
  const conns: Deno.Conn[] = [];
  try {
    const port = Number(new URL(server.url).port);
    for (let i = 0; i < 400; i++) {
      try {
        conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
      } catch {
        break; // refused: the listener is down at this moment
      }
    }
    assert.ok(conns.length > 200, `only ${conns.length} connections opened`);
    // The server comes back: /health answers again within the deadline.
    const deadline = Date.now() + CLOSE_DEADLINE_MS;
    let status = 0;
    while (status !== 200) {
      assert.ok(Date.now() < deadline, "the server stayed deaf after running out of descriptors");
      status = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(1000) })
        .then(async (r) => (await r.body?.cancel(), r.status), () => 0);
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    closeAll(conns);
    await Deno.remove(root, { recursive: true });
  }
});
