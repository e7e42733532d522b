// How the server starts processes: natively (libc's posix_spawn over FFI, POSIX_SPAWN_SETSID,
// pipes on one poll loop, exits noticed from SIGCHLD) and through the Deno.Command + setsid fallback
// (SANDBAR_PROCESS_SPAWN=command), with the same behaviour either way. Real servers, real
// processes, and the server's own /proc entries for what it holds: no descriptor is leaked, no
// poll outlives its processes, output larger than a pipe never blocks a child, a stdin write
// waits for room, children start clean. Waits poll with a generous bound; nothing depends on
// tight timings.
import assert from "node:assert/strict";
import { nativeSpawnSupported } from "../../server/process/posix_spawn.ts";
import { procStat, serverPid } from "../helpers/proc.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { eventually, settled } from "../helpers/wait.ts";
import { ownTreeCgroup } from "../../server/process/tree_cgroups.ts";

async function postJson(server: TestServer, path: string, body: unknown) {
  const res = await server.post(path, body);
  return { status: res.status, body: await res.json() };
}

/** What the descriptors of `pid` are (`pipe:[…]`, a path), sockets left out. */
function descriptors(pid: number): Map<number, string> {
  const out = new Map<number, string>();
  for (const e of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      const target = Deno.readLinkSync(`/proc/${pid}/fd/${e.name}`);
      if (!target.startsWith("socket:")) out.set(Number(e.name), target);
    } catch { /* closed while listing */ }
  }
  return out;
}

/** Children of `pid` that have exited and were never reaped. */
function zombieChildren(pid: number): number[] {
  const zombies: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const stat = procStat(Number(e.name));
    if (stat?.ppid === pid && stat.state === "Z") zombies.push(Number(e.name));
  }
  return zombies;
}

/** `poll` and `ppoll` syscall numbers (x86_64; aarch64 has only `ppoll`). */
const POLL_SYSCALLS = Deno.build.arch === "x86_64" ? ["7", "271"] : ["73"];

/** Threads of `pid` blocked in poll(2) now. */
function pollingThreads(pid: number): number {
  let n = 0;
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const call = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/syscall`).split(" ")[0];
      if (POLL_SYSCALLS.includes(call)) n++;
    } catch { /* the thread ended */ }
  }
  return n;
}

function summary(fds: Map<number, string>): string {
  const kinds = [...fds.values()].map((t) => t.replace(/\[\d+\]$/, "")).sort();
  return `${fds.size}: ${kinds.join(" ")}`;
}

/** The buffered output of a background process, both streams, as text. */
async function outputText(server: TestServer, pid: number): Promise<string> {
  const out = await (await server.fetch(`/process/${pid}/output`)).json();
  return out.chunks.map((c: { data: string }) => c.data).join("");
}

/** The pid a background process printed, once it has. */
async function printedPid(server: TestServer, pid: number): Promise<number> {
  let printed = 0;
  await eventually("the process printed a pid", async () => {
    printed = Number((await outputText(server, pid)).trim());
    return printed > 0;
  });
  return printed;
}

/**
 * A shell string that starts `sleep 300` in a session of its own (out of the group, so not
 * killed with it, and holding the pipes), waits until it really is, and prints its pid.
 */
// The runaway writes its pid once `setsid` has made it a session leader (a confined process may
// not read /proc/<pid>/stat to check).
/** Whether test servers end process trees by cgroup here (a writable v2 or v1 freezer hierarchy). */
const TREES_BY_CGROUP = "dir" in ownTreeCgroup(2) || "dir" in ownTreeCgroup(1);

const RUNAWAY = "rm -f .runaway; setsid sh -c 'echo $$ > .runaway; exec sleep 300' & " +
  "until [ -s .runaway ]; do sleep 0.01; done; cat .runaway";

function alive(pid: number): boolean {
  const st = procStat(pid);
  return st !== null && st.state !== "Z" && st.state !== "X";
}

const SPAWN_PATHS: { name: string; env: Record<string, string> }[] = [
  { name: "native", env: {} },
  { name: "setsid fallback", env: { SANDBAR_PROCESS_SPAWN: "command" } },
];

for (const path of SPAWN_PATHS) {
  Deno.test(`${path.name}: results, signals, timeouts, groups and clean children`, async (t) => {
    await using server = await startTestServer({ env: path.env });
    const spid = serverPid(server);
    await t.step("the spawn path in use is the one asked for", async () => {
      const { body } = await postJson(server, "/process/start", { cmd: "sleep 300" });
      // The native path watches its processes from one thread parked in poll(2).
      if (path.name === "native") {
        await eventually("the poll loop is parked", () => pollingThreads(spid) > 0);
      }
      assert.equal(pollingThreads(spid) > 0, path.name === "native");
      await postJson(server, `/process/${body.pid}/signal`, { signal: "SIGKILL" });
      await eventually("it is reaped", () => procStat(body.pid) === null);
      await eventually("no poll is left", () => pollingThreads(spid) === 0);
    });
    await t.step("a PATH directory the server may not read: found, or surely missing", async () => {
      // Outside every directory the narrowed server may read: Deno cannot look in it, libc can.
      const dir = await Deno.makeTempDir({ prefix: "sandbar-spawn-path-" });
      try {
        await Deno.writeTextFile(`${dir}/sandbar-hello`, "#!/bin/sh\necho hello\n", {
          mode: 0o755,
        });
        const env = { PATH: `${dir}:/usr/bin:/bin` };
        const found = await postJson(server, "/process/shell", { argv: ["sandbar-hello"], env });
        if (path.name === "native") {
          // Found, and refused by the kernel: the directory is outside paths.allow.
          assert.deepEqual([found.status, found.body.code], [403, "process_denied"]);
        } else assert.equal(found.body.stdout, "hello\n");
        const missing = await postJson(server, "/process/shell", {
          argv: ["sandbar-missing-tool"],
          env,
        });
        assert.deepEqual([missing.status, missing.body.code], [400, "process_invalid"]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
    await t.step("relative and empty PATH entries are the request's cwd, as in bash", async () => {
      const project = `${server.root}/project`;
      await Deno.mkdir(`${project}/bin`, { recursive: true });
      await Deno.writeTextFile(`${project}/bin/sandbar-rel`, "#!/bin/sh\necho rel\n", {
        mode: 0o755,
      });
      await Deno.writeTextFile(`${project}/sandbar-dot`, "#!/bin/sh\necho dot\n", {
        mode: 0o755,
      });
      const run = (request: Record<string, unknown>, PATH: string) =>
        postJson(server, "/process/shell", { ...request, cwd: project, env: { PATH } });
      // argv (exec form), a plain command (run without bash), and a pipeline (run by bash).
      for (const request of [{ argv: ["sandbar-rel"] }, { cmd: "sandbar-rel" }]) {
        const r = await run(request, "bin:/usr/bin:/bin");
        assert.deepEqual([r.status, r.body.stdout], [200, "rel\n"], JSON.stringify(request));
      }
      assert.equal(
        (await run({ cmd: "sandbar-rel | cat" }, "bin:/usr/bin:/bin")).body.stdout,
        "rel\n",
      );
      for (const request of [{ argv: ["sandbar-dot"] }, { cmd: "sandbar-dot" }]) {
        const r = await run(request, ":/usr/bin:/bin");
        assert.deepEqual([r.status, r.body.stdout], [200, "dot\n"], JSON.stringify(request));
      }
      // Relative to the request's cwd, not the server's: elsewhere the name is nowhere.
      const elsewhere = await postJson(server, "/process/shell", {
        argv: ["sandbar-rel"],
        cwd: server.root,
        env: { PATH: "bin:/usr/bin:/bin" },
      });
      assert.deepEqual([elsewhere.status, elsewhere.body.code], [400, "process_invalid"]);
    });
    await t.step("stdout, stderr, exit code, stdin text", async () => {
      const r = await postJson(server, "/process/shell", {
        cmd: "cat; echo err >&2; exit 3",
        stdin: "in\n",
      });
      assert.deepEqual([r.body.stdout, r.body.stderr, r.body.exit_code], ["in\n", "err\n", 3]);
    });
    await t.step("a signal is 128+n with its name; a timeout is 124", async () => {
      const killed = await postJson(server, "/process/shell", { cmd: "kill -TERM $$" });
      assert.deepEqual([killed.body.exit_code, killed.body.signal], [143, "SIGTERM"]);
      const slow = await postJson(server, "/process/shell", { cmd: "sleep 30", timeout: 0.2 });
      assert.deepEqual([slow.body.exit_code, slow.body.timed_out], [124, true]);
    });
    await t.step(
      "each process leads its own session and group; grandchildren die with it",
      async () => {
        const { body } = await postJson(server, "/process/start", {
          cmd: "sleep 300 & echo $!; wait",
        });
        // Native: a leader from the start. setsid: once it has called setsid(2), just after.
        if (path.name !== "native") {
          await eventually("setsid made the session", () => procStat(body.pid)?.sid === body.pid);
        }
        const st = procStat(body.pid)!;
        assert.deepEqual([st.pgrp, st.sid, st.ppid], [body.pid, body.pid, spid]);
        const grandchild = await printedPid(server, body.pid);
        assert.ok(alive(grandchild));
        await postJson(server, `/process/${body.pid}/signal`, { signal: "SIGTERM" });
        await eventually("the grandchild died with the group", () => !alive(grandchild));
      },
    );
    await t.step("a child holds only 0, 1 and 2, with signals at their defaults", async () => {
      // Another process's stdin pipe is open meanwhile: it must not leak into this child.
      const other = await postJson(server, "/process/start", { cmd: "cat", stdin: true });
      const fds = await postJson(server, "/process/shell", { argv: ["ls", "/proc/self/fd"] });
      // 0, 1, 2 and ls's own listing: not even what the machine hands this test's children.
      assert.equal(fds.body.stdout, "0\n1\n2\n3\n");
      // bash lists a signal ignored on entry as `trap -- '' SIG…`; python the blocked ones.
      const traps = await postJson(server, "/process/shell", { argv: ["bash", "-c", "trap -p"] });
      assert.deepEqual([traps.body.stdout, traps.body.exit_code], ["", 0]);
      const blocked = await postJson(server, "/process/shell", {
        argv: [
          "/usr/bin/python3",
          "-c",
          "import signal; print(signal.pthread_sigmask(signal.SIG_BLOCK, []))",
        ],
      });
      assert.equal(blocked.body.stdout, "set()\n");
      const pipe = await postJson(server, "/process/shell", { cmd: "yes | head -c 2" });
      assert.deepEqual([pipe.body.stdout, pipe.body.stderr, pipe.body.exit_code], ["y\n", "", 0]);
      await postJson(server, `/process/${other.body.pid}/stdin`, { close: true });
    });
    await t.step("a script without #! runs with /bin/sh, as execvp would", async () => {
      await Deno.writeTextFile(`${server.root}/plain-script`, "echo from script $1\n", {
        mode: 0o755,
      });
      const r = await postJson(server, "/process/shell", { argv: ["./plain-script", "x"] });
      assert.deepEqual([r.body.stdout, r.body.exit_code], ["from script x\n", 0]);
      const direct = await postJson(server, "/process/shell", { cmd: "./plain-script y" });
      assert.equal(direct.body.stdout, "from script y\n");
    });
    await t.step("a missing program is process_invalid", async () => {
      const r = await postJson(server, "/process/shell", { argv: ["no-such-program-sandbar"] });
      assert.deepEqual([r.status, r.body.code], [400, "process_invalid"]);
    });
    await t.step(
      "a runaway that left the group and holds the pipes is cut off by the timeout",
      async () => {
        const r = await postJson(server, "/process/shell", {
          cmd: RUNAWAY,
          timeout: 2,
        });
        const runaway = Number(r.body.stdout.trim());
        try {
          if (TREES_BY_CGROUP) {
            // Its tree (a cgroup) ended with the command: the pipes closed at once.
            assert.deepEqual([r.body.exit_code, r.body.timed_out], [0, false]);
            await eventually("the runaway ended", () => !alive(runaway), 5000);
          } else {
            // The session fallback cannot find a `setsid` process whose parent has exited.
            assert.deepEqual([r.body.exit_code, r.body.timed_out], [124, true]);
            assert.ok(alive(runaway), "setsid took it out of the group and session");
          }
        } finally {
          if (alive(runaway)) Deno.kill(runaway, "SIGKILL");
        }
      },
    );
  });
}

Deno.test("no descriptor is left behind after 200 runs of every kind", async () => {
  await using server = await startTestServer();
  const spid = serverPid(server);
  const big = "x".repeat(200_000); // more than a pipe holds: the stdin write waits for room
  const runs: (() => Promise<void>)[] = [
    async () =>
      assert.equal((await postJson(server, "/process/shell", { cmd: "true" })).body.exit_code, 0),
    async () => {
      const r = await postJson(server, "/process/shell", { cmd: "cat", stdin: big });
      assert.equal(r.body.stdout.length, big.length);
    },
    async () => {
      const r = await postJson(server, "/process/shell", { cmd: "echo o; echo e >&2; exit 3" });
      assert.equal(r.body.exit_code, 3);
    },
    async () => {
      const res = await server.post("/process/shell/stream", { cmd: "echo a; echo b >&2" });
      assert.match(await res.text(), /"type":"exit"/);
    },
    async () => {
      const r = await postJson(server, "/process/shell", { argv: ["no-such-program-sandbar"] });
      assert.equal(r.status, 400);
    },
    async () => {
      const r = await postJson(server, "/process/shell", { cmd: "sleep 30", timeout: 0.05 });
      assert.equal(r.body.exit_code, 124);
    },
    async () => {
      const { body } = await postJson(server, "/process/start", { cmd: "echo bg", stdin: true });
      const done = await (await server.fetch(`/process/${body.pid}?wait=true`)).json();
      assert.equal(done.exit_code, 0);
    },
    async () => {
      // A stream the client drops after the first chunk: the group is killed.
      const res = await server.post("/process/shell/stream", { cmd: "yes" });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
    },
  ];
  await runs[0]();
  // The default identity's confinement is built on a thread of its own at listen.
  await settled("the server's descriptors settle", () => summary(descriptors(spid)));
  const before = descriptors(spid);
  for (let i = 0; i < 200; i++) await runs[i % runs.length]();
  await eventually(
    "the server holds what it held before",
    () => summary(descriptors(spid)) === summary(before),
  ).catch(() => assert.equal(summary(descriptors(spid)), summary(before)));
  await eventually("every child is reaped", () => zombieChildren(spid).length === 0)
    .catch(() => assert.deepEqual(zombieChildren(spid), []));
});

Deno.test("output larger than a pipe never blocks a child, read or not", async () => {
  await using server = await startTestServer();
  const { body } = await postJson(server, "/process/start", {
    cmd: "head -c 3000000 /dev/zero | tr '\\0' a",
    buffer_bytes: 65536,
  });
  // Nobody reads its output; it must still run to the end.
  const done = await (await server.fetch(`/process/${body.pid}?wait=true&timeout=60`)).json();
  assert.deepEqual([done.running, done.exit_code, done.output_bytes], [false, 0, 3_000_000]);
  assert.ok(done.dropped_bytes >= 3_000_000 - 65536, `dropped ${done.dropped_bytes}`);
  const shell = await postJson(server, "/process/shell", {
    cmd: "head -c 5000000 /dev/zero | tr '\\0' b; echo done >&2",
    max_output_bytes: 1000,
  });
  assert.equal(shell.body.stdout, "b".repeat(1000));
  assert.deepEqual([shell.body.stdout_dropped, shell.body.stderr], [4_999_000, "done\n"]);
});

Deno.test("stdin: a write larger than the pipe waits for the reader; one never read fails at exit", async () => {
  await using server = await startTestServer();
  const data = "z".repeat(1 << 20);
  const slow = await postJson(server, "/process/start", { cmd: "sleep 0.5; exec wc -c" });
  const wrote = await postJson(server, `/process/${slow.body.pid}/stdin`, { data, close: true });
  assert.deepEqual([wrote.status, wrote.body.written, wrote.body.stdin_open], [
    200,
    1 << 20,
    false,
  ]);
  await (await server.fetch(`/process/${slow.body.pid}?wait=true&timeout=60`)).json();
  assert.equal((await outputText(server, slow.body.pid)).trim(), String(1 << 20));

  // Reads a little, then never again: the write stays pending until the process is killed.
  const stuck = await postJson(server, "/process/start", {
    cmd: "head -c 1000 >/dev/null; exec sleep 300",
  });
  const pending = postJson(server, `/process/${stuck.body.pid}/stdin`, { data });
  // The server still answers while the write waits.
  const info = await (await server.fetch(`/process/${stuck.body.pid}`)).json();
  assert.deepEqual([info.running, info.stdin_open], [true, true]);
  await postJson(server, `/process/${stuck.body.pid}/signal`, { signal: "SIGKILL" });
  const failed = await pending;
  assert.deepEqual([failed.status, failed.body.code], [409, "conflict"]);
});

Deno.test("the server stops while a runaway holds a process's pipes", async () => {
  const server = await startTestServer();
  const { body } = await postJson(server, "/process/start", { cmd: `${RUNAWAY}; sleep 300` });
  const runaway = await printedPid(server, body.pid);
  try {
    assert.ok(alive(runaway));
    await server.close(); // returns only once the server process has exited
    // Its tree ended with the server, setsid notwithstanding.
    await eventually("the runaway ended", () => !alive(runaway), 5000);
  } finally {
    if (alive(runaway)) Deno.kill(runaway, "SIGKILL");
  }
});

Deno.test({
  name: "native children in this process: no descriptor and no poll outlive them",
  ignore: !nativeSpawnSupported(),
  fn: async () => {
    const script = new URL("./fixtures/native_children.ts", import.meta.url);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script.pathname],
      stdin: "null",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const { before, after, pollRunning, exitsWatched } = JSON.parse(
      new TextDecoder().decode(out.stdout),
    );
    assert.equal(pollRunning, false);
    assert.equal(exitsWatched, 0);
    assert.equal(after, before);
  },
});
