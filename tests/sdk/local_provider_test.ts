/**
 * The local provider against real sandboxes: bubblewrap isolation, state on disk shared with
 * other processes, the lifetime enforced by the detached supervisor (also after the creating
 * process has exited), pause and resume of the whole tree, the port gateway, and kill leaving
 * nothing behind.
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import {
  type CommandHandle,
  LocalProvider,
  ProviderFeatureNotSupportedError,
  Sandbox,
  SandboxNotFoundError,
  ServerAPIError,
  ValidationError,
} from "../../sdk/mod.ts";
import {
  assertNothingLeft,
  dropSandbarHome,
  holdsWithin,
  processesMentioning,
  runChild,
  sandboxChildren,
  sandboxDirs,
  useSandbarHome,
} from "./sandbox_helpers.ts";

const home = await useSandbarHome();

Deno.test.afterAll(() => dropSandbarHome(home));

Deno.test("create: an isolated sandbox with its state on disk, killed without a trace", async () => {
  const sandbox = await Sandbox.create({ timeout: 120, metadata: { purpose: "test" } });
  const dir = `${home}/sandboxes/${sandbox.id}`;
  assert.equal(sandbox.status, "running");
  assert.equal(sandbox.provider, "local");
  assert.match(sandbox.id, /^[a-z0-9]{20}$/);
  assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
  assert.equal((await Deno.stat(`${dir}/state.json`)).mode! & 0o777, 0o600);
  const state = JSON.parse(await Deno.readTextFile(`${dir}/state.json`));
  assert.equal(state.serverToken.length >= 40, true);
  assert.notEqual(state.serverToken, state.accessToken);

  const r = await sandbox.commands.run("echo $(hostname) $(id -u) $HOME; ls /");
  assert.equal(r.exitCode, 0, r.stderr);
  const [first, ...rest] = r.stdout.trim().split("\n");
  assert.equal(first.split(" ")[0], "sandbox");
  assert.equal(first.split(" ")[2], "/home/user");
  // Its own root: the host's home directories and /root contents are not there.
  assert.ok(!rest.includes("boot") && !rest.includes("srv"), rest.join(" "));
  // Its own PID namespace: the server bubblewrap runs is in another one than the host's.
  const inside = sandboxChildren(dir).find((p) => p.cmdline.includes("server/main.ts"));
  assert.ok(inside, "the sandbox's server is a descendant of its bubblewrap");
  assert.notEqual(
    Deno.readLinkSync(`/proc/${inside.pid}/ns/pid`),
    Deno.readLinkSync("/proc/self/ns/pid"),
  );
  // Files written inside land in the sandbox's home on the host, nowhere else.
  await sandbox.files.write("/home/user/marker.txt", "inside");
  assert.equal(await Deno.readTextFile(`${dir}/disk/home/marker.txt`), "inside");

  await sandbox.kill();
  assert.equal(sandbox.status, "stopped");
  await assertNothingLeft(home, sandbox.id);
  await sandbox.kill(); // again: nothing to do
});

Deno.test("the server's permissions name what is inside: the sandbox's PATH and Deno, nothing only the host has", async () => {
  await using sandbox = await Sandbox.create();
  // The server itself (bubblewrap's own processes name it in their script too).
  const server = sandboxChildren(`${home}/sandboxes/${sandbox.id}`)
    .find((p) => p.cmdline.split("\0")[0] === "/opt/sandbar/bin/deno");
  assert.ok(server, "the sandbox's server is a descendant of its bubblewrap");
  const argv = server.cmdline.split("\0");
  const reads = argv.filter((a) => a.startsWith("--allow-read=")).flatMap((a) =>
    a.slice("--allow-read=".length).split(",")
  );
  // Seen through the server's own root: every path it may read is there inside.
  const inside = (path: string) => {
    try {
      Deno.statSync(`/proc/${server.pid}/root${path}`);
      return true;
    } catch {
      return false;
    }
  };
  // (The relay's key file is gone: spent and removed before the server loaded.)
  for (const path of reads.filter((p) => !p.endsWith("/relay_key"))) {
    assert.ok(inside(path), `${path} is named but not inside`);
  }
  assert.ok(reads.includes("/opt/sandbar/bin"), `the Deno inside, among ${reads.join(",")}`);
  // The host's PATH directories that the sandbox does not have (where npx keeps Deno, a
  // ~/.cargo/bin) are not named: the host's layout is no business of the sandbox.
  for (const dir of (Deno.env.get("PATH") ?? "").split(":").filter(Boolean)) {
    if (!inside(dir)) assert.ok(!reads.includes(dir), `the host's ${dir} is named`);
  }
  assert.ok(!reads.includes(dirname(Deno.execPath())) || inside(dirname(Deno.execPath())));
  const found = await sandbox.commands.run("command -v deno");
  assert.equal(found.stdout.trim(), "/opt/sandbar/bin/deno");
});

Deno.test("the sandbox cannot reach the host's loopback", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const accepted = (async () => {
    for await (const conn of listener) conn.close();
  })();
  await using sandbox = await Sandbox.create();
  const r = await sandbox.commands.run(
    `(echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo reached || echo refused; ` +
      "python3 -c 'import socket; print(*(n for _, n in socket.if_nameindex()))'",
  );
  assert.deepEqual(r.stdout.trim().split("\n"), ["refused", "lo"]);
  listener.close();
  await accepted;
});

Deno.test("list, connect and kill work from another process", async () => {
  const sandbox = await Sandbox.create({ metadata: { owner: "parent" } });
  const listed = JSON.parse(
    await runChild(`
      const list = await sdk.Sandbox.list();
      const other = await sdk.Sandbox.connect(${JSON.stringify(sandbox.id)});
      const r = await other.commands.run("echo from-child");
      console.log(JSON.stringify({ list, out: r.stdout }));
    `),
  );
  const mine = listed.list.find((i: { sandboxId: string }) => i.sandboxId === sandbox.id);
  assert.deepEqual(mine.metadata, { owner: "parent" });
  assert.equal(mine.envdAccessToken, null); // list leaves tokens out
  assert.equal(listed.out, "from-child\n");

  const killed = await runChild(
    `console.log(await sdk.Sandbox.killById(${JSON.stringify(sandbox.id)}));`,
  );
  assert.equal(killed, "true");
  await assertNothingLeft(home, sandbox.id);
  assert.equal(await sandbox.isRunning(), false);
  await assert.rejects(() => sandbox.refreshInfo(), SandboxNotFoundError);
  assert.equal(await Sandbox.killById(sandbox.id), false);
  await assert.rejects(() => Sandbox.connect(sandbox.id), SandboxNotFoundError);
});

Deno.test("the lifetime ends the sandbox after the creating process has exited", async () => {
  const id = await runChild(`
    const sandbox = await sdk.Sandbox.create({ timeout: 6 });
    console.log(sandbox.id);
  `);
  // The creator is gone; the sandbox lives on until its lifetime ends.
  const alive = await Sandbox.connect(id);
  assert.equal((await alive.commands.run("echo still here")).stdout, "still here\n");
  assert.ok((await Sandbox.list()).some((i) => i.sandboxId === id));
  assert.ok(await holdsWithin(() => !sandboxDirs(home).includes(id), 25), "not gone in time");
  await assertNothingLeft(home, id);
  assert.ok(!(await Sandbox.list()).some((i) => i.sandboxId === id));
});

Deno.test("setTimeout shortens the lifetime, and bad lifetimes are refused", async () => {
  const sandbox = await Sandbox.create({ timeout: 300 });
  const before = sandbox.info.endAt!.getTime();
  await assert.rejects(() => sandbox.setTimeout(0), ValidationError);
  await assert.rejects(() => sandbox.setTimeout(86_401), ValidationError);
  await sandbox.setTimeout(2);
  assert.ok(sandbox.info.endAt!.getTime() < before);
  assert.ok(await holdsWithin(() => !sandboxDirs(home).includes(sandbox.id), 15));
  await assertNothingLeft(home, sandbox.id);
  await assert.rejects(() => Sandbox.create({ timeout: 0 }), ValidationError);
  await assert.rejects(() => Sandbox.create({ timeout: 86_401 }), ValidationError);
  await assert.rejects(() => Sandbox.create({ timeout: 1.5 }), ValidationError);
});

Deno.test("pause stops every process (a counter stops advancing) and resume continues", async () => {
  await using sandbox = await Sandbox.create();
  const counter = `${home}/sandboxes/${sandbox.id}/disk/home/counter`;
  await sandbox.commands.start(
    "i=0; while true; do i=$((i+1)); echo $i > counter.tmp; mv counter.tmp counter; sleep 0.02; done",
    { timeout: 0 },
  );
  const read = async () => Number(await Deno.readTextFile(counter).catch(() => "0"));
  assert.ok(await holdsWithin(async () => (await read()) > 3));
  await sandbox.pause();
  assert.equal(sandbox.status, "paused");
  const paused = await read();
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(await read(), paused, "the counter advanced while paused");
  // While paused the gateway answers at once instead of hanging.
  await assert.rejects(() => sandbox.commands.run("true"), (e) => {
    assert.ok(e instanceof ServerAPIError);
    assert.match((e as Error).message, /paused/);
    return true;
  });
  await sandbox.resume();
  assert.equal(sandbox.status, "running");
  assert.ok(await holdsWithin(async () => (await read()) > paused + 3), "no progress after resume");
});

/**
 * A web server on port 8080 inside `sandbox` with `<h1>hi</h1>` at `/index.html`, and an HTTP
 * client that, as a browser resolving `*.localhost` to the gateway, sends everything there.
 */
async function pageOn8080(
  sandbox: Sandbox,
): Promise<{ web: CommandHandle; client: Deno.HttpClient; gateway: URL }> {
  const web = await sandbox.commands.start("python3 -m http.server 8080 --bind 127.0.0.1", {
    timeout: 0,
    cwd: "/home/user",
  });
  await sandbox.files.write("/home/user/index.html", "<h1>hi</h1>");
  const gateway = new URL(sandbox.url);
  const client = Deno.createHttpClient({
    proxy: { transport: "tcp", hostname: gateway.hostname, port: Number(gateway.port) },
  });
  return { web, client, gateway };
}

Deno.test("ports: a signed URL opens with no header, for that port only, until it expires", async () => {
  await using sandbox = await Sandbox.create();
  // As a browser: *.localhost to the gateway, no header of ours, cookies kept by hand.
  const { web, client } = await pageOn8080(sandbox);
  try {
    assert.ok(
      await holdsWithin(async () => {
        const res = await fetch(`${sandbox.url}/_port/8080/index.html`, {
          headers: sandbox.network.getAccessHeaders(),
        });
        await res.body?.cancel();
        return res.status === 200;
      }),
    );
    const signed = sandbox.network.getSignedUrl(8080, { expires: 2 });
    assert.match(
      signed,
      new RegExp(`^http://8080-${sandbox.id}\\.localhost:\\d+/\\?sandbar_link=`),
    );
    const first = await fetch(signed, { client, redirect: "manual" });
    await first.body?.cancel();
    assert.equal(first.status, 302);
    // The same address without the link (absolute here: a proxy client sends absolute targets).
    assert.equal(first.headers.get("location"), signed.split("?")[0]);
    const cookie = first.headers.get("set-cookie")!.split(";")[0];
    assert.match(cookie, /^sandbar_link_8080=/);
    const page = `${sandbox.network.getUrl(8080)}/index.html`;
    const opened = await fetch(page, { client, headers: { cookie } });
    assert.equal(await opened.text(), "<h1>hi</h1>");
    // The link is for port 8080 alone: not the server's port, nor another link's.
    const other = await fetch(`${sandbox.network.getUrl(9000)}/health`, {
      client,
      headers: { cookie: cookie.replace("_8080=", "_9000=") },
    });
    assert.equal(other.status, 401);
    await other.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 2500)); // past its expiry
    const late = await fetch(page, { client, headers: { cookie } });
    assert.equal(late.status, 401);
    await late.body?.cancel();
    const lateLink = await fetch(signed, { client, redirect: "manual" });
    assert.equal(lateLink.status, 401);
    assert.match((await lateLink.json()).error, /expired/);
  } finally {
    client.close();
    await web.kill();
  }
});

Deno.test("ports: reachable through the gateway, with the access token in secure mode", async () => {
  await using sandbox = await Sandbox.create();
  const { web, client, gateway } = await pageOn8080(sandbox);
  try {
    const url = `${sandbox.network.getUrl(8080)}/index.html`;
    assert.match(url, new RegExp(`^http://8080-${sandbox.id}\\.localhost:${gateway.port}/`));
    const headers = sandbox.network.getAccessHeaders();
    assert.ok(
      await holdsWithin(async () => {
        const res = await fetch(url, { client, headers });
        await res.body?.cancel();
        return res.status === 200;
      }),
    );
    const ok = await fetch(url, { client, headers });
    assert.equal(await ok.text(), "<h1>hi</h1>");
    const denied = await fetch(url, { client });
    assert.equal(denied.status, 401);
    assert.equal((await denied.json()).code, "unauthorized");
    // The path form, for clients that cannot resolve *.localhost.
    const byPath = await fetch(`${sandbox.url}/_port/8080/index.html`, { headers });
    assert.equal(await byPath.text(), "<h1>hi</h1>");
    const closed = await fetch(`${sandbox.url}/_port/8081/`, { headers });
    assert.equal(closed.status, 502);
    assert.equal((await closed.json()).code, "port_unreachable");
  } finally {
    client.close();
    await web.kill();
  }
});

Deno.test("secure: false leaves ports open on loopback", async () => {
  await using sandbox = await Sandbox.create({ secure: false });
  assert.deepEqual(sandbox.network.getAccessHeaders(), {});
  const res = await fetch(`${sandbox.url}/health`);
  assert.deepEqual(await res.json(), { status: "ok" });
  assert.equal((await sandbox.commands.run("echo ok")).stdout, "ok\n");
  // One user: `user: "root"` is refused without pointing at a sudo the sandbox cannot run.
  await assert.rejects(sandbox.commands.run("id", { user: "root" }), (e) => {
    assert.ok(e instanceof ProviderFeatureNotSupportedError);
    assert.match(e.suggestion, /^Leave out `user`/);
    assert.doesNotMatch(e.suggestion, /use `sudo`/);
    return true;
  });
});

Deno.test("the local provider has no GPU: ProviderFeatureNotSupportedError (E8004)", async () => {
  const before = sandboxDirs(home).length;
  await assert.rejects(() => Sandbox.create({ gpu: "a100" }), (e) => {
    assert.ok(e instanceof ProviderFeatureNotSupportedError);
    assert.equal((e as ProviderFeatureNotSupportedError).code, "E8004");
    return true;
  });
  assert.equal(sandboxDirs(home).length, before);
  await assert.rejects(() => Sandbox.create("python-3.12"), ValidationError);
});

Deno.test("without bubblewrap: Deno permissions only, same API, nothing left", async () => {
  const provider = new LocalProvider({ home, isolation: "none" });
  const sandbox = await Sandbox.create({ provider });
  const r = await sandbox.commands.run("pwd");
  assert.equal(r.stdout.trim(), `${home}/sandboxes/${sandbox.id}/disk/home`);
  // The server's own file access is narrowed to the sandbox's directory.
  await assert.rejects(() => sandbox.files.read("/etc/hostname"));
  assert.equal(processesMentioning(`${home}/sandboxes/${sandbox.id}`).length > 0, true);
  await sandbox.kill();
  await assertNothingLeft(home, sandbox.id);
});

Deno.test("a killed supervisor (the home's host) takes its sandbox along; list removes the leftovers", async () => {
  const sandbox = await Sandbox.create();
  const dir = `${home}/sandboxes/${sandbox.id}`;
  const state = JSON.parse(await Deno.readTextFile(`${dir}/state.json`));
  Deno.kill(state.supervisor.pid, "SIGKILL");
  // bubblewrap's --die-with-parent ends the whole sandbox with its supervisor.
  assert.ok(await holdsWithin(() => processesMentioning(dir).length === 0), "sandbox outlived");
  assert.ok(!(await Sandbox.list()).some((i) => i.sandboxId === sandbox.id));
  await assertNothingLeft(home, sandbox.id);
  assert.equal(await sandbox.isRunning(), false);
});

Deno.test("a sandbox whose server dies is cleaned up by its supervisor", async () => {
  const sandbox = await Sandbox.create();
  // Killed from the host: the sandbox's own processes cannot signal their server (confinement).
  const server = sandboxChildren(`${home}/sandboxes/${sandbox.id}`)
    .find((p) => p.cmdline.includes("server/main.ts"));
  assert.ok(server, "the sandbox's server is a descendant of its bubblewrap");
  Deno.kill(server.pid, "SIGKILL");
  assert.ok(await holdsWithin(() => !sandboxDirs(home).includes(sandbox.id), 10));
  await assertNothingLeft(home, sandbox.id);
  await assert.rejects(() => sandbox.refreshInfo(), SandboxNotFoundError);
});

Deno.test("the gateway refuses malformed heads and other sandboxes' hosts", async () => {
  await using sandbox = await Sandbox.create({ secure: false });
  const port = Number(new URL(sandbox.url).port);
  const raw = async (head: string) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode(head));
    const text = await new Response(conn.readable).text();
    return text.split("\r\n")[0];
  };
  assert.equal(await raw("GET /health HTTP/1.1\r\n folded: x\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  assert.equal(await raw("NOT HTTP\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  assert.equal(
    await raw(`GET /health HTTP/1.1\r\nHost: 9000-${"z".repeat(20)}.localhost\r\n\r\n`),
    "HTTP/1.1 404 Not Found",
  );
  assert.equal(
    await raw("GET /_port/70000/ HTTP/1.1\r\nHost: x\r\n\r\n"),
    "HTTP/1.1 400 Bad Request",
  );
  assert.equal(await raw("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), "HTTP/1.1 200 OK");
  // One request per connection, keep-alive asked for or not: the connection ends after the
  // answer (reading to its end returns), so no second request passes without the gateway's
  // checks and no idle connection is left open at the server.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const health = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n";
  await conn.write(new TextEncoder().encode(health));
  let kept = false;
  const deadline = setTimeout(() => (kept = true, conn.close()), 10_000);
  const answers = await new Response(conn.readable).text().catch(() => "");
  clearTimeout(deadline);
  assert.ok(!kept, "the connection was kept open after its answer");
  assert.equal(answers.match(/^HTTP\/1\.1 200 /gm)?.length, 1, answers);
  // A second request pipelined behind it gets no answer, and does not cost the first its answer
  // (the server closes with the second still unread; that used to end the relay's copy of the
  // answer half of the time).
  for (let i = 0; i < 10; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode(health + health));
    const both = await new Response(conn.readable).text();
    assert.equal(
      both.match(/^HTTP\/1\.1 /gm)?.length,
      1,
      `connection ${i}: ${both || "no answer"}`,
    );
  }
});

Deno.test("the host's channel cannot be replaced, redirected or joined from inside", async () => {
  await using sandbox = await Sandbox.create();
  // An attacker inside: try to move, remove or shadow the socket the host's requests come
  // through, and to join the channel with a guessed key or nonce.
  await sandbox.files.write(
    "/home/user/attack.py",
    `import json, os, socket
d = "/run/sandbar-channel"
sock = d + "/relay.sock"
res = {}
def attempt(name, fn):
    try:
        fn()
        res[name] = "done"
    except OSError as e:
        res[name] = e.strerror
attempt("rename", lambda: os.rename(sock, d + "/moved"))
attempt("unlink", lambda: os.unlink(sock))
attempt("symlink", lambda: os.symlink("/", d + "/evil"))
attempt("bind", lambda: socket.socket(socket.AF_UNIX).bind(d + "/evil.sock"))
answers = []
for line in [b"control " + b"0" * 64 + b"\\n", b"data " + b"0" * 32 + b"\\n", b"open 1 9000\\n"]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(line)
    s.settimeout(20)
    answers.append(s.recv(100).decode())
res["answers"] = answers
print(json.dumps(res))
`,
  );
  const attack = await sandbox.commands.run("python3 /home/user/attack.py");
  assert.equal(attack.exitCode, 0, attack.stderr);
  const readOnly = "Read-only file system";
  assert.deepEqual(JSON.parse(attack.stdout), {
    rename: readOnly,
    unlink: readOnly,
    symlink: readOnly,
    bind: readOnly,
    answers: ["", "", ""], // each closed by the host without a word
  });
  // A listener where the socket used to be (the run directory is writable inside), recording
  // whatever reaches it: the host must never dial it.
  await sandbox.files.write(
    "/home/user/listen.py",
    `import os, socket
p = "/run/sandbar/relay.sock"
try:
    os.unlink(p)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX)
try:
    s.bind(p)
except PermissionError as e:
    # The confinement refuses writes outside the sandbox's allowed paths: nothing can listen.
    open("/home/user/listening", "w").write(f"refused {e.errno}")
    raise SystemExit(0)
s.listen()
open("/home/user/listening", "w").write("listening")
while True:
    c, _ = s.accept()
    with open("/home/user/captured", "ab") as f:
        f.write(c.recv(65536))
    c.close()
`,
  );
  const listener = await sandbox.commands.start("python3 /home/user/listen.py", { timeout: 0 });
  assert.ok(await holdsWithin(() => sandbox.files.exists("/home/user/listening")));
  // Either the confinement kept it from listening at all (EACCES), or it listens and, below,
  // must hear nothing.
  const listening = await sandbox.files.read("/home/user/listening");
  assert.match(listening, /^(listening|refused 13)$/);
  for (let i = 0; i < 3; i++) {
    const r = await sandbox.commands.run(`echo request ${i}`);
    assert.equal(r.stdout, `request ${i}\n`);
  }
  assert.equal(await sandbox.files.exists("/home/user/captured"), false);
  if (listening === "listening") await listener.kill();
  // The relay, which every request passes through, runs in the server's process (preloaded),
  // which is closed to the sandbox's processes: /proc is open inside, but neither its
  // descriptors (the channel's among them) nor its memory can be opened (the host finds its pid
  // for us).
  const relay = sandboxChildren(`${home}/sandboxes/${sandbox.id}`)
    .find((p) => p.cmdline.includes("--preload") && p.cmdline.includes("relay.ts"));
  assert.ok(relay, "the relay runs in the sandbox's server");
  // Its pid as the sandbox sees it: the last NSpid of its status on the host.
  const nspid = /^NSpid:\s+(.*)$/m.exec(Deno.readTextFileSync(`/proc/${relay.pid}/status`))!;
  const inner = nspid[1].trim().split(/\s+/).at(-1);
  const peek = await sandbox.commands.run(
    `grep -c relay.ts /proc/${inner}/cmdline; ` +
      `for f in /proc/${inner}/fd/0 /proc/${inner}/fd/1 /proc/${inner}/mem; do ` +
      '(exec 3<"$f") 2>/dev/null && echo "$f open" || echo closed; done',
  );
  assert.equal(peek.stdout, "1\nclosed\nclosed\nclosed\n");
  // The server starts the sandbox's processes, and holds the channel's sockets: none of them is
  // inherited (a command's descriptors are its standard streams only).
  const fds = await sandbox.commands.run("ls -l /proc/self/fd/ | grep -c socket: || true");
  assert.equal(fds.stdout, "0\n");
});

Deno.test("no program behind a port gets the access token; the gateway still refuses strangers", async () => {
  await using sandbox = await Sandbox.create();
  // A program in the sandbox that records the headers of every request it gets.
  await sandbox.files.write(
    "/home/user/record.py",
    `import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("content-length") or 0)
        self.rfile.read(n)
        with open("/home/user/headers.jsonl", "a") as f:
            f.write(json.dumps({k.lower(): v for k, v in self.headers.items()}) + "\\n")
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = answer
    do_POST = answer
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", 8080), H).serve_forever()
`,
  );
  const recorder = await sandbox.commands.start("python3 /home/user/record.py", { timeout: 0 });
  try {
    const access = sandbox.network.getAccessHeaders();
    assert.ok(
      await holdsWithin(async () => {
        const res = await fetch(`${sandbox.url}/_port/8080/ready`, { headers: access });
        await res.body?.cancel();
        return res.status === 200;
      }),
    );
    // The SDK's own clients of a port: serverAt, and run on another server port.
    assert.equal(await sandbox.serverAt(8080).health(), true);
    await sandbox.run("anything", { a: 1 }, { serverPort: 8080 }).catch(() => {});
    // Without a credential the gateway refuses, on a program's port and on the server's.
    for (const url of [`${sandbox.url}/_port/8080/`, `${sandbox.url}/health`]) {
      const refused = await fetch(url);
      assert.equal(refused.status, 401);
      assert.equal((await refused.json()).code, "unauthorized");
    }
    const recorded = (await sandbox.files.read("/home/user/headers.jsonl")).trim().split("\n")
      .map((l) => JSON.parse(l) as Record<string, string>);
    assert.ok(recorded.length >= 3, JSON.stringify(recorded));
    assert.ok(recorded.some((h) => h["content-type"] === "application/json")); // run's POST
    const token = sandbox.info.envdAccessToken!;
    for (const headers of recorded) {
      assert.equal(headers["x-access-token"], undefined);
      assert.equal(headers["x-sandbar-gateway"], undefined);
      assert.ok(!Object.values(headers).some((v) => v.includes(token)), JSON.stringify(headers));
    }
    // The sandbox's own server is still reached by the SDK (it authenticates by its token).
    assert.equal((await sandbox.commands.run("echo still")).stdout, "still\n");
  } finally {
    await recorder.kill();
  }
});
