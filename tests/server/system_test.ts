// The system group over real HTTP, checked against what the test reads from the machine itself.
import assert from "node:assert/strict";
import { startTestServer, TEST_TOKEN } from "../helpers/server.ts";

async function run(argv: string[]): Promise<string> {
  const out = await new Deno.Command(argv[0], { args: argv.slice(1), stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout);
}

function memTotal(): number {
  const m = /^MemTotal:\s+(\d+) kB$/m.exec(Deno.readTextFileSync("/proc/meminfo"));
  return Number(m![1]) * 1024;
}

Deno.test("system_info and system_metrics describe this machine", async (t) => {
  await using server = await startTestServer();
  await t.step("info", async () => {
    const res = await server.fetch("/system/info");
    assert.equal(res.status, 200);
    const info = await res.json();
    assert.equal(info.os.name, "linux");
    assert.equal(info.os.release, Deno.osRelease());
    assert.equal(info.arch, Deno.build.arch);
    assert.equal(info.hostname, Deno.hostname());
    assert.equal(info.cpus.count, navigator.hardwareConcurrency);
    assert.equal(info.memory.total_bytes, memTotal());
    assert.ok(info.memory.available_bytes > 0);
    assert.ok(info.disk.total_bytes > 0 && info.disk.available_bytes > 0);
    assert.ok(info.uptime_seconds > 0);
    assert.equal(info.user.uid, Deno.uid());
    assert.equal(info.versions.deno, Deno.version.deno);
    const git = /git version (\S+)/.exec(await run(["git", "--version"]))![1];
    assert.equal(info.versions.git, git);
  });
  await t.step("metrics", async () => {
    const m = await (await server.fetch("/system/metrics")).json();
    assert.equal(m.cpu.count, navigator.hardwareConcurrency);
    assert.ok(m.cpu.percent >= 0 && m.cpu.percent <= 100);
    assert.equal(m.memory.total_bytes, memTotal());
    assert.equal(m.memory.used_bytes, m.memory.total_bytes - m.memory.available_bytes);
    assert.ok(m.disk.percent > 0 && m.disk.percent < 100);
    for (const k of ["1m", "5m", "15m"]) assert.ok(m.load[k] >= 0);
    assert.ok(m.processes.total > 0);
    assert.ok(m.uptime_seconds > 0);
  });
});

Deno.test("system_env never reveals the server's tokens; set_env reaches the next shell", async (t) => {
  const agentToken = "agent-token-abcdef0123456789";
  await using server = await startTestServer({
    policy: {
      identities: [{ id: "agent", token_env: "AGENT_TOKEN", scopes: ["*"] }],
    },
    env: { AGENT_TOKEN: agentToken, COPY_OF_TOKEN: TEST_TOKEN, SANDBAR_SECRET_SETTING: "x" },
  });
  await t.step("neither GET /system/env nor a process sees a token", async () => {
    const { env } = await (await server.fetch("/system/env")).json();
    for (
      const name of ["SVC_SERVER_TOKEN", "AGENT_TOKEN", "COPY_OF_TOKEN", "SANDBAR_SECRET_SETTING"]
    ) {
      assert.equal(env[name], undefined, name);
    }
    const text = JSON.stringify(env);
    assert.ok(!text.includes(TEST_TOKEN) && !text.includes(agentToken));
    assert.ok(env.PATH, "an ordinary variable is there");
    const res = await server.post("/process/shell", { cmd: "env; cat /proc/self/environ" });
    const { stdout } = await res.json();
    assert.ok(!stdout.includes(TEST_TOKEN) && !stdout.includes(agentToken), stdout);
    // The agent identity works, so the token did reach the server.
    const asAgent = await server.fetch("/system/env", { token: agentToken });
    assert.equal(asAgent.status, 200);
    await asAgent.body?.cancel();
  });
  await t.step("set, then the next shell sees it; null removes", async () => {
    const set = await server.post("/system/env", { env: { GREETING: "hello", PATH: undefined } });
    assert.equal(set.status, 200);
    assert.equal((await set.json()).env.GREETING, "hello");
    const seen = await server.post("/process/shell", { cmd: 'echo "$GREETING"' });
    assert.equal((await seen.json()).stdout, "hello\n");
    const started = await server.post("/process/start", { cmd: 'echo "$GREETING"' });
    const { pid } = await started.json();
    await (await server.fetch(`/process/${pid}?wait=true`)).body?.cancel();
    const out = await (await server.fetch(`/process/${pid}/output`)).json();
    assert.equal(out.chunks[0].data, "hello\n");
    const unset = await server.post("/system/env", { env: { GREETING: null } });
    assert.equal((await unset.json()).env.GREETING, undefined);
    const gone = await server.post("/process/shell", { cmd: 'echo "[$GREETING]"' });
    assert.equal((await gone.json()).stdout, "[]\n");
  });
  await t.step("refusals", async () => {
    const cases: [unknown, number, string][] = [
      [{ env: { LD_PRELOAD: "/x.so" } }, 403, "env_var_denied"],
      [{ env: { SVC_SERVER_TOKEN: "mine" } }, 403, "env_var_denied"],
      [{ env: { AGENT_TOKEN: "mine" } }, 403, "env_var_denied"],
      [{ env: { SANDBAR_GROUP_BROWSER: "1" } }, 403, "env_var_denied"],
      [{ env: { "A=B": "1" } }, 400, "env_invalid"],
      [{ env: { A: 1 } }, 400, "env_invalid"],
      [{ env: "A=1" }, 400, "env_invalid"],
      [{}, 400, "env_invalid"],
    ];
    for (const [body, status, code] of cases) {
      const res = await server.post("/system/env", body);
      const got = await res.json();
      assert.equal(res.status, status, JSON.stringify(body));
      assert.equal(got.code, code, JSON.stringify(body));
    }
    const { env } = await (await server.fetch("/system/env")).json();
    assert.equal(env.LD_PRELOAD, undefined);
  });
});

Deno.test("set_env under env.allow: other names are env_var_not_allowed", async () => {
  await using server = await startTestServer({ policy: { env: { allow: ["APP_*"] } } });
  const ok = await server.post("/system/env", { env: { APP_MODE: "x" } });
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  const res = await server.post("/system/env", { env: { HOME: "/tmp" } });
  assert.equal(res.status, 403);
  assert.equal((await res.json()).code, "env_var_not_allowed");
});

Deno.test("system_ports lists a listening socket with its process", async () => {
  await using server = await startTestServer();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const { ports } = await (await server.fetch("/system/ports")).json();
    const mine = ports.find((p: { port: number }) => p.port === port);
    assert.deepEqual(mine, {
      port,
      address: "127.0.0.1",
      family: "ipv4",
      uid: Deno.uid(),
      pid: Deno.pid,
      command: "deno",
    });
    const serverPort = Number(new URL(server.url).port);
    assert.ok(ports.some((p: { port: number }) => p.port === serverPort));
    const sorted = [...ports].sort((a, b) => a.port - b.port);
    assert.deepEqual(ports.map((p: { port: number }) => p.port), sorted.map((p) => p.port));
  } finally {
    listener.close();
  }
});

Deno.test("system_packages: Debian packages as dpkg knows them, filtered and bounded", async () => {
  await using server = await startTestServer();
  const bash = (await run(["dpkg-query", "-W", "-f", "${Version}", "bash"])).trim();
  const res = await server.fetch("/system/packages?manager=deb&query=bash&limit=10000");
  const body = await res.json();
  assert.equal(res.status, 200);
  const found = body.packages.find((p: { name: string }) => p.name === "bash");
  assert.deepEqual(found, { manager: "deb", name: "bash", version: bash });
  assert.ok(body.packages.every((p: { name: string }) => p.name.includes("bash")));
  const limited = await (await server.fetch("/system/packages?manager=deb&limit=5")).json();
  assert.equal(limited.packages.length, 5);
  assert.equal(limited.truncated, true);
  assert.ok(limited.managers.deb.count > 5);
  const pythonThere = (await run(["sh", "-c", "command -v python3 || true"])).trim() !== "";
  const pip = await (await server.fetch("/system/packages?manager=pip")).json();
  assert.equal(pip.managers.pip.present, pythonThere);
  const bad = await server.fetch("/system/packages?manager=brew");
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).code, "invalid_arguments");
});
