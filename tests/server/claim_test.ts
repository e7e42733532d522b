// A pooled server (`--await-claim`): it serves with the tokens it started with until the claim
// on its stdin replaces them; the claim's variables reach the processes it starts; a claim it
// cannot apply ends it.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));
const POOL_TOKEN = "pool-token-0123456789abcdef";

interface Pooled {
  child: Deno.ChildProcess;
  url: string;
  lines: ReadableStreamDefaultReader<string>;
  root: string;
}

async function nextEvent(lines: ReadableStreamDefaultReader<string>): Promise<string> {
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) return text;
    text += value;
  }
  return text.slice(0, text.indexOf("\n"));
}

async function startPooled(): Promise<Pooled> {
  const root = await Deno.makeTempDir({ prefix: "sandbar-claim-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--port", "0", "--pty-port", "0", "--root", root, "--await-claim"],
    env: { SVC_SERVER_TOKEN: POOL_TOKEN },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const event = JSON.parse(await nextEvent(lines));
  assert.equal(event.event, "listening");
  return { child, url: event.url, lines, root };
}

async function stop(p: Pooled): Promise<string> {
  try {
    p.child.kill("SIGTERM");
  } catch { /* exited */ }
  await p.lines.cancel();
  const stderr = await new Response(p.child.stderr).text();
  await p.child.status;
  await Deno.remove(p.root, { recursive: true });
  return stderr;
}

function shell(url: string, token: string, command: string): Promise<Response> {
  return fetch(`${url}/process/shell`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ cmd: command }),
  });
}

async function claim(p: Pooled, line: string): Promise<void> {
  const writer = p.child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(line + "\n"));
  await writer.close();
}

Deno.test("a claim replaces the server's token and gives its processes the caller's variables", async () => {
  const p = await startPooled();
  try {
    const before = await shell(p.url, POOL_TOKEN, "echo pooled");
    assert.equal(before.status, 200);
    assert.equal((await before.json()).stdout, "pooled\n");
    const token = "claimed-token-" + crypto.randomUUID();
    await claim(p, JSON.stringify({ tokens: { default: token }, env: { GREETING: "hello" } }));
    assert.deepEqual(JSON.parse(await nextEvent(p.lines)), { event: "claimed" });
    const old = await shell(p.url, POOL_TOKEN, "echo old");
    assert.equal(old.status, 401, "the pool's token no longer works");
    await old.body?.cancel();
    const after = await shell(p.url, token, 'echo "$GREETING"');
    assert.equal(after.status, 200);
    assert.equal((await after.json()).stdout, "hello\n");
  } finally {
    await stop(p);
  }
});

Deno.test("a claim that names an unknown identity or a reserved variable ends the server", async () => {
  for (
    const [line, why] of [
      [JSON.stringify({ tokens: { nobody: "x".repeat(20) }, env: {} }), /no identity nobody/],
      [JSON.stringify({ tokens: {}, env: { SVC_SERVER_TOKEN: "x" } }), /reserved/],
      ['{"tokens":{},"env":{},"extra":1}', /unknown field extra/],
    ] as const
  ) {
    const p = await startPooled();
    await claim(p, line);
    const status = await p.child.status;
    assert.equal(status.code, 1);
    const stderr = await stop(p);
    assert.match(stderr, why);
  }
});
