/**
 * client.pty against the real server: terminals over HTTP and the WebSocket PtyConnection.
 */

import assert from "node:assert/strict";
import {
  ConflictError,
  EndpointNotAvailableError,
  ServerAuthError,
  ServerClient,
  ServerNotFoundError,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("pty: create, list, get, resize, delete", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token, ptyUrl: server.ptyUrl });
  const t = await client.pty.create({ cols: 100, rows: 30 });
  assert.match(t.id, /^pty_[0-9a-f]{12}$/);
  assert.deepEqual([t.cols, t.rows, t.status], [100, 30, "running"]);
  assert.ok((await client.pty.list()).some((x) => x.id === t.id));
  assert.equal((await client.pty.get(t.id)).pid, t.pid);
  const resized = await client.pty.resize(t.id, 120, 40);
  assert.deepEqual([resized.cols, resized.rows], [120, 40]);
  const gone = await client.pty.delete(t.id);
  assert.deepEqual([gone.status, gone.reason], ["exited", "deleted"]);
  await assert.rejects(client.pty.get(t.id), ServerNotFoundError);
});

Deno.test("pty.connect: typed input echoes, stty sees a resize, the exit status arrives", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token, ptyUrl: server.ptyUrl });
  const t = await client.pty.create({ cols: 80, rows: 24, env: { PS1: "$ " } });
  await using conn = await client.pty.connect(t.id);
  assert.equal(conn.id, t.id);
  conn.send("echo sum=$((40+2))\r");
  await conn.expect("sum=42");
  conn.resize(132, 43);
  conn.send("stty size\r");
  await conn.expect("43 132");
  conn.send("exit 3\r");
  assert.deepEqual(await conn.exited, { exitCode: 3, signal: null, reason: "exit" });
  const closed = await conn.closed;
  assert.equal(closed.code, 1000);
  await assert.rejects(client.pty.resize(t.id, 10, 10), ConflictError);
});

Deno.test("pty.connect: a reconnect replays recent output; iteration yields raw bytes", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token, ptyUrl: server.ptyUrl });
  const t = await client.pty.create();
  {
    await using first = await client.pty.connect(t.id);
    first.send("echo marker-$((6*7))\r");
    await first.expect("marker-42");
  }
  await using second = await client.pty.connect(t.id);
  assert.ok(second.replay > 0);
  await second.expect("marker-42"); // from the scrollback
  second.send("echo bytes\r");
  let text = "";
  for await (const chunk of second) {
    text += new TextDecoder().decode(chunk);
    if (text.includes("bytes\r\n")) break;
  }
  assert.ok(text.includes("bytes"));
  await client.pty.delete(t.id);
  assert.deepEqual((await second.exited)?.reason, "deleted");
});

Deno.test("pty.connect: refusals raise the HTTP errors (unknown id, bad token, disabled)", async () => {
  await using server = await startTestServer({ policy: { endpoints: { pty_connect: false } } });
  await using client = new ServerClient(server.url, { token: server.token, ptyUrl: server.ptyUrl });
  await assert.rejects(client.pty.connect("pty_000000000000"), EndpointNotAvailableError);
  await using open = await startTestServer();
  await using ok = new ServerClient(open.url, { token: open.token, ptyUrl: open.ptyUrl });
  await assert.rejects(ok.pty.connect("pty_000000000000"), ServerNotFoundError);
  const bad = ok.withToken("wrong-token-0123456789");
  await assert.rejects(bad.pty.connect("pty_000000000000"), ServerAuthError);
  await bad.close();
});

Deno.test("client.close closes its terminal connections", async () => {
  await using server = await startTestServer();
  const client = new ServerClient(server.url, { token: server.token, ptyUrl: server.ptyUrl });
  const t = await client.pty.create();
  const conn = await client.pty.connect(t.id);
  await client.close();
  assert.equal((await conn.closed).code, 1000);
  await using other = new ServerClient(server.url, { token: server.token });
  await other.pty.delete(t.id);
});
