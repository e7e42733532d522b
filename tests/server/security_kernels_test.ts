/**
 * Private kernels: a process of one identity can neither subscribe to, connect to, nor signal
 * another identity's code kernels (python's ipykernel and Deno's TypeScript kernel), judged by
 * the output it receives; a process of the kernel's own identity still can, which shows the probe
 * would see it. Also: a kernel gets a temporary directory it can write whatever its working
 * directory is, and the directory goes with the kernel.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { KERNEL_PORT_BASE, KERNEL_PORTS_PER_IDENTITY } from "../../server/confine/kernel_ports.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";

const hasKernel = new Deno.Command("/usr/bin/python3", {
  args: ["-c", "import ipykernel, jupyter_client, zmq"],
  stdout: "null",
  stderr: "null",
}).outputSync().success;

const OTHER_TOKEN = "other-token-0123456789abcdef";

// A subscriber to every port of a block: SUB sockets with an empty subscription (ZeroMQ's PUB
// needs no key), plus a plain TCP connect to each port and a signal to the kernel's pid.
const PROBE = String.raw`
import os, signal, socket, sys, time, zmq
first, last, pid, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
reachable = 0
for port in range(first, last + 1):
    s = socket.socket()
    s.settimeout(0.5)
    if s.connect_ex(("127.0.0.1", port)) == 0:
        reachable += 1
    s.close()
try:
    os.kill(pid, 0)
    signalled = "yes"
except OSError as e:
    signalled = e.strerror
ctx = zmq.Context()
poller = zmq.Poller()
for port in range(first, last + 1):
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{port}")
    poller.register(sub, zmq.POLLIN)
time.sleep(1)
open(out + ".ready", "w").write("ready")
received = 0
end = time.time() + 8
while time.time() < end and not os.path.exists(out + ".stop"):
    for sock, _ in poller.poll(100):
        for frame in sock.recv_multipart():
            if b"MARK-4417" in frame:
                received += 1
open(out, "w").write(f"reachable={reachable} signalled={signalled} received={received}")
`;

/**
 * The first port of the block `pid`'s listening sockets are in: a server draws its blocks'
 * rotation at random, so the test reads where the kernel really listens (its socket inodes
 * against the host's TCP table).
 */
async function blockOf(pid: number): Promise<number> {
  const inodes = new Set<string>();
  for await (const fd of Deno.readDir(`/proc/${pid}/fd`)) {
    const link = await Deno.readLink(`/proc/${pid}/fd/${fd.name}`).catch(() => "");
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m) inodes.add(m[1]);
  }
  for (const line of (await Deno.readTextFile("/proc/net/tcp")).split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // local address, state 0A (LISTEN), inode
    if (f.length > 9 && f[3] === "0A" && inodes.has(f[9])) {
      const port = parseInt(f[1].split(":")[1], 16);
      const offset = port - KERNEL_PORT_BASE;
      // ZeroMQ's own sockets (its signalers) listen on ephemeral ports outside the blocks.
      if (port >= 32768 || offset < 0) continue;
      return KERNEL_PORT_BASE + offset - (offset % KERNEL_PORTS_PER_IDENTITY);
    }
  }
  throw new Error(`kernel ${pid} listens on no TCP port`);
}

async function code(server: TestServer, body: Record<string, unknown>, token?: string) {
  const res = await server.post("/code/run", body, { token });
  const got = await res.json();
  assert.ok(res.status < 300, JSON.stringify(got));
  return got;
}

/** Run the probe as the identity of `token` against `block` while `ctx` prints the mark. */
async function probe(
  server: TestServer,
  token: string | undefined,
  first: number,
  kernel: { id: string; pid: number; language: string },
  name: string,
): Promise<string> {
  const out = join(server.root, name);
  const script = join(server.root, "probe.py");
  const last = first + KERNEL_PORTS_PER_IDENTITY - 1;
  const res = await server.post("/process/start", {
    cmd: `/usr/bin/python3 ${script} ${first} ${last} ${kernel.pid} ${out}`,
  }, { token });
  assert.ok(res.ok, await res.clone().text());
  await res.body?.cancel();
  await eventually(
    "the probe is ready",
    () => Deno.stat(out + ".ready").then(() => true, () => false),
  );
  const print = kernel.language === "python"
    ? "import time\nfor i in range(15):\n    print('MARK-4417', flush=True); time.sleep(0.1)"
    : "for (let i = 0; i < 15; i++) { console.log('MARK-4417'); await new Promise((r) => setTimeout(r, 100)); }";
  const ran = await code(server, { code: print, context_id: kernel.id });
  assert.match(ran.text ?? ran.stdout ?? JSON.stringify(ran), /MARK-4417/);
  await Deno.writeTextFile(out + ".stop", "");
  await eventually("the probe answered", () => Deno.stat(out).then(() => true, () => false));
  return await Deno.readTextFile(out);
}

Deno.test({
  name: "kernels: another identity cannot subscribe, connect or signal; the owner can",
  ignore: !hasKernel,
  async fn(t) {
    await using server = await startTestServer({
      policy: {
        preset: "standard",
        paths: { allow: ["."] },
        params: { languages: ["python", "typescript"] },
        identities: [{
          id: "other",
          token_env: "OTHER_TOKEN",
          scopes: ["process:run", "process:read", "code:run", "files:read"],
        }],
      },
      env: { OTHER_TOKEN },
    });
    await Deno.writeTextFile(join(server.root, "probe.py"), PROBE);
    for (const language of ["python", "typescript"]) {
      await t.step(language, async () => {
        const kernel = await code(server, { action: "create_context", language });
        const adminBlock = await blockOf(kernel.pid);
        const mine = await probe(server, undefined, adminBlock, kernel, `mine-${language}`);
        const match = /reachable=(\d+) signalled=(\S+) received=(\d+)/.exec(mine)!;
        assert.ok(Number(match[1]) >= 5, mine);
        assert.equal(match[2], "yes", mine);
        assert.ok(Number(match[3]) > 0, `the owner's own probe saw no output: ${mine}`);
        const theirs = await probe(server, OTHER_TOKEN, adminBlock, kernel, `other-${language}`);
        assert.match(
          theirs,
          /^reachable=0 signalled=Operation not permitted received=0$/,
          "another identity reached the kernel",
        );
      });
    }
  },
});

Deno.test({
  name: "kernels: a temporary directory whatever the working directory, removed with the kernel",
  ignore: !hasKernel,
  async fn() {
    await using server = await startTestServer({
      policy: { preset: "standard", paths: { allow: ["."], read_only: ["ref"] } },
    });
    await Deno.mkdir(join(server.root, "ref"));
    const ctx = await code(server, { action: "create_context", language: "python" });
    const got = await code(server, {
      context_id: ctx.id,
      code: "import tempfile, os\n" +
        "with tempfile.NamedTemporaryFile(mode='w') as f:\n    f.write('x')\n" +
        "print(tempfile.gettempdir())",
    });
    assert.equal(got.error, null, JSON.stringify(got));
    const tmp = got.text.trim();
    assert.ok(Deno.statSync(tmp).isDirectory);
    assert.ok(!tmp.startsWith(server.root), tmp);
    const bash = await code(server, { action: "create_context", language: "bash" });
    const b = await code(server, {
      context_id: bash.id,
      code: "mktemp >/dev/null && echo $TMPDIR",
    });
    assert.notEqual(b.text.trim(), tmp, "each kernel has its own");
    const res = await server.post("/code/run", { action: "remove_context", context_id: ctx.id });
    assert.ok(res.status < 300);
    await res.body?.cancel();
    assert.throws(() => Deno.statSync(tmp), Deno.errors.NotFound);
  },
});
