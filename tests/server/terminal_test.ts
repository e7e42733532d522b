// The terminal group against the real server with real bash on real pseudo-terminals: the
// WebSocket protocol of docs/server/terminal.md, backpressure, and that every way a terminal
// ends (exit, DELETE, idle timeout, shutdown, 200 create/delete cycles) leaves no process and
// no descriptor behind. Guards and authentication: terminal_guards_test.ts.
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bash without rc files and with a prompt we can recognize. */
const BASH = { shell: "/bin/bash", args: ["--norc", "--noprofile"], env: { PS1: "READY$ " } };

// deno-lint-ignore no-explicit-any
type Json = any;

/** Terminal output with escape sequences and carriage returns removed. */
function plain(s: string): string {
  // deno-lint-ignore no-control-regex
  return s.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>]|\r/g, "");
}

/** Live processes of a session, read from /proc independently of the server's own code. */
function sessionMembers(sid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (f[0] !== "Z" && Number(f[3]) === sid) out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

function processName(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/comm`).trim();
  } catch {
    return "";
  }
}

/** A WebSocket client of one terminal, collecting output and control messages. */
class TermSocket {
  readonly ws: WebSocket;
  raw = "";
  readonly controls: Json[] = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters: (() => void)[] = [];

  constructor(url: string, init?: { protocols?: string[]; headers?: Record<string, string> }) {
    // Deno's WebSocket takes headers in a second-argument object.
    this.ws = new WebSocket(url, init as unknown as string[]);
    this.ws.binaryType = "arraybuffer";
    const opened = Promise.withResolvers<void>();
    const closed = Promise.withResolvers<{ code: number; reason: string }>();
    this.opened = opened.promise;
    this.closed = closed.promise;
    this.ws.onopen = () => opened.resolve();
    this.ws.onerror = () => opened.reject(new Error("WebSocket failed"));
    this.ws.onclose = (e) => {
      opened.reject(new Error(`closed before open: ${e.code}`));
      closed.resolve({ code: e.code, reason: e.reason });
      this.#notify();
    };
    this.opened.catch(() => {});
    this.ws.onmessage = (e) => {
      if (typeof e.data === "string") this.controls.push(JSON.parse(e.data));
      else this.raw += decoder.decode(new Uint8Array(e.data), { stream: true });
      this.#notify();
    };
  }

  static async connect(server: TestServer, id: string): Promise<TermSocket> {
    const s = new TermSocket(`${server.ptyUrl}/pty/${id}/connect`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    await s.opened;
    await s.control("ready");
    return s;
  }

  get text(): string {
    return plain(this.raw);
  }

  #notify(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Wait (driven by messages, with a deadline) until `check` returns something truthy. */
  async until<T>(check: () => T | undefined | false, what: string, ms = 20_000): Promise<T> {
    const deadline = Date.now() + ms;
    while (true) {
      const v = check();
      if (v) return v;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; output so far:\n${this.text}`);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        timer = setTimeout(r, left);
      });
      clearTimeout(timer);
    }
  }

  waitText(re: RegExp, from = 0): Promise<RegExpMatchArray> {
    return this.until(() => this.text.slice(from).match(re) ?? undefined, `output ${re}`);
  }

  control(type: string, from = 0): Promise<Json> {
    return this.until(
      () => this.controls.slice(from).find((m) => m.type === type),
      `control message ${type}`,
    );
  }

  type(s: string): void {
    this.ws.send(encoder.encode(s));
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  async close(): Promise<void> {
    if (this.ws.readyState < WebSocket.CLOSING) this.ws.close();
    await this.closed;
  }
}

async function create(server: TestServer, body: Record<string, unknown>): Promise<Json> {
  const res = await server.fetch("/pty", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 201, JSON.stringify(json));
  return json;
}

async function remove(server: TestServer, id: string): Promise<Json> {
  const res = await server.fetch(`/pty/${id}`, { method: "DELETE" });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}

Deno.test("a real bash on a real terminal: echo, resize, Ctrl-C, job control, exit status", async (t) => {
  await using server = await startTestServer();
  const term = await create(server, { ...BASH, cols: 100, rows: 30 });
  assert.match(term.id, /^pty_[0-9a-f]{12}$/);
  assert.equal(term.status, "running");
  assert.equal(term.cols, 100);
  assert.equal(term.rows, 30);
  assert.equal(term.cwd, server.root);
  assert.equal(term.connect_url, `${server.ptyUrl}/pty/${term.id}/connect`);
  const ws = await TermSocket.connect(server, term.id);
  await ws.waitText(/READY\$ /);

  await t.step("typed input echoes and runs", async () => {
    ws.type("echo sum=$((6*7))\r");
    await ws.waitText(/echo sum=\$\(\(6\*7\)\)\n/); // the terminal echoed the keystrokes
    await ws.waitText(/\nsum=42\n/); // and bash ran them
  });

  await t.step(
    "the shell leads its session, with the terminal as controlling terminal",
    async () => {
      const from = ws.text.length;
      // A confined shell may not read /proc/<pid>/stat: python asks the kernel instead.
      ws.type(
        "tty; echo \"pid=$$ sid=$(/usr/bin/python3 -c 'import os; print(os.getsid(0))')\"\r",
      );
      const m = await ws.waitText(/\/dev\/pts\/\d+\npid=(\d+) sid=(\d+)\n/, from);
      assert.equal(Number(m[1]), term.pid);
      assert.equal(Number(m[2]), term.pid);
    },
  );

  await t.step(
    "stty size reports the size, after a resize over HTTP and over the socket",
    async () => {
      let from = ws.text.length;
      ws.type("stty size\r");
      await ws.waitText(/\n30 100\n/, from);
      const res = await server.fetch(`/pty/${term.id}/resize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ cols: 132, rows: 40 }),
      });
      assert.equal(res.status, 200);
      const after = await res.json();
      assert.deepEqual([after.cols, after.rows], [132, 40]);
      const told = await ws.control("resize");
      assert.deepEqual([told.cols, told.rows], [132, 40]);
      from = ws.text.length;
      ws.type("stty size; echo cols=$COLUMNS\r");
      await ws.waitText(/\n40 132\ncols=132\n/, from);
      ws.send({ type: "resize", cols: 61, rows: 17 });
      from = ws.text.length;
      ws.type("stty size\r");
      await ws.waitText(/\n17 61\n/, from);
      const got = await (await server.fetch(`/pty/${term.id}`)).json();
      assert.deepEqual([got.cols, got.rows], [61, 17]);
    },
  );

  await t.step("Ctrl-C interrupts a foreground sleep", async () => {
    ws.type("sleep 300\r");
    const sleeper = await eventually(
      "sleep to run in the terminal's session",
      () => sessionMembers(term.pid).find((p) => processName(p) === "sleep"),
    );
    const from = ws.text.length;
    ws.type("\x03");
    await eventually("sleep to be interrupted", () => !sessionMembers(term.pid).includes(sleeper));
    ws.type("echo status=$?\r");
    await ws.waitText(/status=130\n/, from);
  });

  await t.step("job control: Ctrl-Z stops a job, which can then be killed", async () => {
    const from = ws.text.length;
    ws.type("sleep 301\r");
    await eventually(
      "sleep 301 to start",
      () => sessionMembers(term.pid).find((p) => processName(p) === "sleep"),
    );
    ws.type("\x1a"); // Ctrl-Z
    await ws.waitText(/Stopped\s+sleep 301/, from);
    // `wait` alone raced bash's own bookkeeping: it could still see the job as stopped, and a
    // later `exit` then refused with "There are stopped jobs". Wait until bash has let it go.
    ws.type("jobs; kill %1; while jobs %1 >/dev/null 2>&1; do sleep 0.05; done; echo jobs-done\r");
    await ws.waitText(/jobs-done\n/, from);
    await eventually(
      "the killed job to be gone",
      () => !sessionMembers(term.pid).some((p) => processName(p) === "sleep"),
    );
  });

  await t.step("text-frame input, ping, and a refused control message", async () => {
    const from = ws.text.length;
    ws.send({ type: "input", data: "echo via-json-$((1+1))\r" });
    await ws.waitText(/via-json-2\n/, from);
    const c = ws.controls.length;
    ws.send({ type: "ping" });
    await ws.control("pong", c);
    ws.send({ type: "resize", cols: 0, rows: 5 });
    const err = await ws.control("error", c);
    assert.equal(err.code, "invalid_arguments");
    ws.ws.send("not json");
    await ws.until(
      () => ws.controls.slice(c).find((m) => m.code === "invalid_request"),
      "the error for a frame that is not JSON",
    );
  });

  await t.step("the exit status arrives, then the close code", async () => {
    ws.type("sleep 1000 &\rexit 7\r");
    const exit = await ws.control("exit");
    assert.deepEqual(exit, { type: "exit", exit_code: 7, signal: null, reason: "exit" });
    assert.deepEqual(await ws.closed, { code: 1000, reason: "exit" });
    const got = await (await server.fetch(`/pty/${term.id}`)).json();
    assert.equal(got.status, "exited");
    assert.equal(got.exit_code, 7);
    assert.equal(got.reason, "exit");
    assert.equal(typeof got.exited_at, "string");
    // The background job was hung up with the session.
    assert.deepEqual(sessionMembers(term.pid), []);
  });

  await t.step("resizing an exited terminal is 409; deleting it forgets it", async () => {
    const res = await server.fetch(`/pty/${term.id}/resize`, {
      method: "POST",
      body: JSON.stringify({ cols: 10, rows: 10 }),
    });
    assert.equal(res.status, 409);
    assert.equal((await res.json()).code, "conflict");
    await remove(server, term.id);
    const gone = await server.fetch(`/pty/${term.id}`);
    assert.equal(gone.status, 404);
    assert.equal((await gone.json()).error, `No terminal ${term.id}`);
  });
});

Deno.test("reconnect replays the scrollback; several clients share one terminal", async (t) => {
  await using server = await startTestServer();
  const term = await create(server, BASH);

  await t.step("a client that drops and comes back gets the recent output first", async () => {
    const first = await TermSocket.connect(server, term.id);
    first.type("echo marker-$((20+22))\r");
    await first.waitText(/marker-42\n/);
    await first.close();
    const again = await TermSocket.connect(server, term.id);
    const ready = again.controls[0];
    assert.equal(ready.type, "ready");
    assert.ok(ready.replay > 0);
    assert.equal(ready.terminal.id, term.id);
    // Nothing typed on this connection, yet the earlier output is there.
    await again.waitText(/marker-42\n/);
    await again.close();
  });

  const b = await TermSocket.connect(server, term.id);
  await t.step(
    "two clients: both see the output, input from either, resize is broadcast",
    async () => {
      const a = await TermSocket.connect(server, term.id);
      assert.equal(a.controls[0].terminal.clients, 2);
      const fromA = a.text.length;
      const fromB = b.text.length;
      a.type("echo from-a-$((1+2))\r");
      await a.waitText(/from-a-3\n/, fromA);
      await b.waitText(/from-a-3\n/, fromB);
      b.type("echo from-b-$((2+2))\r");
      await a.waitText(/from-b-4\n/, fromA);
      const before = a.controls.length;
      b.send({ type: "resize", cols: 90, rows: 20 });
      const told = await a.control("resize", before);
      assert.deepEqual([told.cols, told.rows], [90, 20]);
      const listed = await (await server.fetch("/pty")).json();
      assert.equal(listed.terminals.length, 1);
      assert.equal(listed.terminals[0].clients, 2);
      await a.close();
      // One client leaving does not affect the other or the terminal.
      const from = b.text.length;
      b.type("echo still-$((3+3))\r");
      await b.waitText(/still-6\n/, from);
    },
  );

  await t.step("DELETE ends it for every client with 4001, jobs included", async () => {
    const c = await TermSocket.connect(server, term.id);
    b.type("sleep 1002 & sleep 1001\r");
    await eventually(
      "both sleeps",
      () => sessionMembers(term.pid).filter((p) => processName(p) === "sleep").length === 2,
    );
    const final = await remove(server, term.id);
    assert.equal(final.status, "exited");
    assert.equal(final.reason, "deleted");
    assert.equal(final.exit_code, null);
    assert.equal(final.signal, "SIGHUP");
    for (const s of [b, c]) {
      const exit = await s.control("exit");
      assert.equal(exit.reason, "deleted");
      assert.deepEqual(await s.closed, { code: 4001, reason: "deleted" });
    }
    assert.deepEqual(sessionMembers(term.pid), []);
    assert.equal((await server.fetch(`/pty/${term.id}`)).status, 404);
    const listed = await (await server.fetch("/pty")).json();
    assert.deepEqual(listed.terminals, []);
  });
});

Deno.test("a shell that ignores SIGHUP is killed by DELETE after the grace", async () => {
  await using server = await startTestServer();
  const term = await create(server, {
    shell: "/bin/sh",
    args: ["-c", "trap '' HUP; echo ignoring; while :; do sleep 1; done"],
  });
  const ws = await TermSocket.connect(server, term.id);
  await ws.waitText(/ignoring/);
  const final = await remove(server, term.id);
  assert.equal(final.signal, "SIGKILL");
  assert.deepEqual(await ws.closed, { code: 4001, reason: "deleted" });
  assert.deepEqual(sessionMembers(term.pid), []);
});

Deno.test("the idle timeout ends a terminal nobody watches", async () => {
  await using server = await startTestServer();
  const term = await create(server, { ...BASH, idle_timeout: 1 });
  let got: Json;
  const deadline = Date.now() + 20_000;
  while (true) {
    got = await (await server.fetch(`/pty/${term.id}`)).json();
    if (got.status === "exited" || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(got.status, "exited");
  assert.equal(got.reason, "idle_timeout");
  assert.deepEqual(sessionMembers(term.pid), []);
  // A late client still gets the last output and the exit, then 4002.
  const late = new TermSocket(`${server.ptyUrl}/pty/${term.id}/connect`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  const exit = await late.control("exit");
  assert.equal(exit.reason, "idle_timeout");
  assert.deepEqual(await late.closed, { code: 4002, reason: "idle_timeout" });
});

Deno.test("stopping the server ends every terminal and its jobs", async () => {
  const server = await startTestServer();
  let pid: number;
  try {
    const term = await create(server, BASH);
    pid = term.pid;
    const ws = await TermSocket.connect(server, term.id);
    ws.type("sleep 1003 &\r");
    await eventually(
      "the background sleep",
      () => sessionMembers(pid).find((p) => processName(p) === "sleep"),
    );
    const closed = ws.closed;
    await server.close();
    const exit = await ws.control("exit");
    assert.equal(exit.reason, "shutdown");
    assert.deepEqual(await closed, { code: 1001, reason: "shutdown" });
  } finally {
    await server.close();
  }
  assert.deepEqual(sessionMembers(pid), []);
});

/** Bytes a process has written so far (`wchar` of /proc/<pid>/io). */
function bytesWritten(pid: number): number {
  const io = Deno.readTextFileSync(`/proc/${pid}/io`);
  return Number(/^wchar: (\d+)$/m.exec(io)![1]);
}

Deno.test("a client that stops reading makes the terminal wait, not the server's memory grow", async () => {
  await using server = await startTestServer();
  const term = await create(server, {
    shell: "/bin/sh",
    args: ["-c", "head -c 2000000000 /dev/zero | tr '\\0' x; echo finished; sleep 60"],
  });
  // A WebSocket client by hand that completes the handshake and then never reads.
  const port = Number(new URL(server.ptyUrl).port);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(encoder.encode(
      `GET /pty/${term.id}/connect HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
        `Sec-WebSocket-Key: ${btoa("0123456789abcdef")}\r\n` +
        `Authorization: Bearer ${server.token}\r\n\r\n`,
    ));
    const head = new Uint8Array(1024);
    const n = await conn.read(head);
    assert.match(decoder.decode(head.subarray(0, n ?? 0)), /^HTTP\/1.1 101/);
    const writer = await eventually(
      "head to run",
      () => sessionMembers(term.pid).find((p) => processName(p) === "head"),
    );
    // Wait until the writer is held up (its count stops moving), then look at how far it got.
    let settled = -1;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const before = bytesWritten(writer);
      await new Promise((r) => setTimeout(r, 300));
      if (bytesWritten(writer) === before) {
        settled = before;
        break;
      }
    }
    // Without backpressure the server would read ~2 GB into memory; with it, the writer stops
    // once the high-water mark (4 MiB) and the socket and terminal buffers are full. The kernel's
    // share is not fixed: loopback receive buffers grow up to tcp_rmem's maximum (32 MiB here),
    // counted by socket-buffer size rather than payload, and a clean-clone CI run saw 66.7 MiB
    // get out before the writer stopped (usually well under 64 MiB). 128 MiB is still a
    // sixteenth of what no backpressure lets through.
    assert.ok(settled >= 0, "the writer was never held up");
    assert.ok(settled < 128 * 1024 * 1024, `the writer got ${settled} bytes out`);
    assert.ok(sessionMembers(term.pid).includes(writer), "the writer is still there, waiting");
  } finally {
    const del = await server.fetch(`/pty/${term.id}`, { method: "DELETE" });
    assert.equal(del.status, 200);
    await del.body?.cancel();
    conn.close();
  }
  assert.deepEqual(sessionMembers(term.pid), []);
});

// 200 terminals created and deleted leave no process and no open descriptor behind, counted in
// the real server process (the launcher's child) from /proc.
const CYCLES = 200;

/** The real server: the launcher's only child. */
function realServerPid(launcher: number): number {
  const children = Deno.readTextFileSync(`/proc/${launcher}/task/${launcher}/children`)
    .trim().split(/\s+/).filter(Boolean).map(Number);
  assert.equal(children.length, 1, `launcher children: ${children}`);
  return children[0];
}

/** The server's open descriptors, as `fd -> target`. */
function openDescriptors(pid: number): Map<string, string> {
  const fds = new Map<string, string>();
  for (const e of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      fds.set(e.name, Deno.readLinkSync(`/proc/${pid}/fd/${e.name}`));
    } catch { /* closed while listing */ }
  }
  return fds;
}

/** Every descendant of `pid` (zombies included: a zombie is a leak too). */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    let kids: number[] = [];
    try {
      kids = Deno.readTextFileSync(`/proc/${p}/task/${p}/children`).trim().split(/\s+/)
        .filter(Boolean).map(Number);
    } catch { /* gone */ }
    for (const k of kids) {
      out.push(k);
      visit(k);
    }
  };
  visit(pid);
  return out;
}

/** Descriptors open after but not before; sockets are counted, not matched, since the
 * client's keep-alive pool may replace a connection by another on a different number. */
function leaked(before: Map<string, string>, after: Map<string, string>): string[] {
  const isSocket = (t: string) => t.startsWith("socket:");
  const sockets = (m: Map<string, string>) => [...m.values()].filter(isSocket).length;
  const out = [...after]
    .filter(([fd, target]) => !isSocket(target) && before.get(fd) !== target)
    .map(([fd, target]) => `${fd} -> ${target}`);
  if (sockets(after) > sockets(before)) out.push(`${sockets(after) - sockets(before)} sockets`);
  return out;
}

Deno.test(`${CYCLES} create/delete cycles leave no process and no descriptor`, async () => {
  await using server = await startTestServer();
  const pid = realServerPid(server.pid);
  const cycle = async (body: Record<string, unknown>): Promise<number> => {
    // HOME points at the test's root: an interactive bash killed while it runs this machine's
    // ~/.bashrc could leave that file's side effects (lock files) behind.
    const t = await create(server, { ...body, env: { HOME: server.root } });
    assert.equal((await remove(server, t.id)).status, "exited");
    return t.pid;
  };
  // Warm up with the same parallelism: the first terminal loads libc and starts the service,
  // and the client's keep-alive pool opens its four connections to the server.
  const busy = { shell: "/bin/bash", args: ["-c", "sleep 100 & sleep 100"] };
  for (let i = 0; i < 2; i++) await Promise.all([cycle({}), cycle(busy), cycle({}), cycle(busy)]);
  const fdsBefore = openDescriptors(pid);
  // Each terminal's shell leads a session of its own (its pid is the session's id). A pid may
  // come round again once its terminal is gone (a busy machine wraps pid_max), so they are
  // counted, not told apart.
  const sids: number[] = [];
  // `busy` is bash with a background job and a foreground one: the whole session must go.
  for (let i = 0; i < CYCLES; i += 4) {
    sids.push(...await Promise.all([cycle({}), cycle(busy), cycle({ cols: 200 }), cycle(busy)]));
  }
  assert.equal(sids.length, CYCLES);
  assert.ok(sids.every((sid) => sid > 1), "every terminal had a shell of its own");
  const alive = [...new Set(sids)].flatMap((sid) => sessionMembers(sid));
  assert.deepEqual(alive, [], "processes of deleted terminals are still alive");
  assert.deepEqual(descendants(pid), [], "the server still has children (or zombies)");
  const fdsAfter = openDescriptors(pid);
  assert.deepEqual(leaked(fdsBefore, fdsAfter), [], "descriptors opened and not closed");
  assert.ok(
    fdsAfter.size <= fdsBefore.size,
    `${fdsBefore.size} fds before, ${fdsAfter.size} after`,
  );
  assert.ok(
    ![...fdsAfter.values()].some((t) => t.startsWith("/dev/pts/") || t === "/dev/ptmx"),
    "a terminal descriptor is still open",
  );
  const list = await (await server.fetch("/pty")).json();
  assert.deepEqual(list.terminals, []);
});
