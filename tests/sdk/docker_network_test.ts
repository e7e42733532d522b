/**
 * `network` under the docker provider, against a real `dockerd` (see `docker_engine.ts`): the
 * container has no network of its own (`NetworkMode: none`); a sandbox created with `network`
 * reaches out only through its egress keeper's proxy on the host
 * (`sdk/providers/docker/egress_keeper.ts`), through the relay's bridge inside. curl inside
 * reaches an allowed origin and is refused another; `network.update` changes that while it runs,
 * also from a second process, and cuts a running download it refuses; `audit` lists every
 * decision; a secret is swapped in at its host only; the keeper is gone after kill and after the
 * container ends by its lifetime with its creator gone; without `network` nothing is reached.
 * "The internet" is servers this test starts on 127.0.0.2 and 127.0.0.3 on the host; no traffic
 * leaves 127.0.0.0/8.
 */

import assert from "node:assert/strict";
import { startSecretOrigins } from "../helpers/secret_origins.ts";
import { join } from "node:path";
import { type DockerProvider, Sandbox, SandboxError, ValidationError } from "../../sdk/mod.ts";
import { isAlive, type ProcessRef } from "../../sdk/providers/local/procfs.ts";
import { BASE_IMAGE, dockerIgnored, type TestEngine } from "./docker_engine.ts";
import { dockerFixture } from "./docker_helpers.ts";
import { everythingReadableInside, runChild } from "./sandbox_helpers.ts";
import { endlessResponse } from "../helpers/endless_response.ts";

const ignore = dockerIgnored();
const docker = dockerFixture();
let engine: TestEngine | undefined;
let home = "";
let provider: DockerProvider;

async function setUp(): Promise<void> {
  ({ engine, home, provider } = await docker());
}

/** A web server on `hostname` that says hello. */
function origin(hostname: string) {
  const server = Deno.serve(
    { hostname, port: 0, onListen: () => {} },
    () => new Response(`hello from ${hostname}`),
  );
  return { server, port: server.addr.port };
}

/** The keeper of sandbox `id`: its directory and its process. */
async function keeper(id: string): Promise<{ dir: string; ref: ProcessRef }> {
  const dir = join(home, "docker-egress", id);
  return { dir, ref: JSON.parse(await Deno.readTextFile(join(dir, "keeper.json"))) };
}

async function gone(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => false, () => true);
}

async function run(sandbox: Sandbox, cmd: string) {
  const r = await sandbox.commands.run(cmd, { timeout: 60 });
  return { ...r, out: r.stdout.trim() };
}

/** What the proxy answered curl (its rule header), or curl's own failure. */
async function refusal(sandbox: Sandbox, url: string): Promise<string> {
  return (await run(
    sandbox,
    `curl -sS -i --max-time 10 ${url} | tr -d '\\r' | grep -i x-sandbar-egress-rule`,
  )).out;
}

Deno.test({
  name:
    "docker sandbox network: curl reaches an allowed host through the proxy, is refused another; update and audit, also from a second process; the keeper goes with kill",
  ignore,
  async fn() {
    await setUp();
    const allowed = origin("127.0.0.2");
    const other = origin("127.0.0.3");
    const a = `http://127.0.0.2:${allowed.port}/`;
    const b = `http://127.0.0.3:${other.port}/`;
    try {
      const sandbox = await Sandbox.create(BASE_IMAGE, {
        provider: "docker",
        timeout: 180,
        network: { allow: ["127.0.0.2"] },
      });
      const { dir, ref } = await keeper(sandbox.id);
      try {
        assert.ok(isAlive(ref), "the keeper runs");
        assert.equal(
          (await run(sandbox, `echo $HTTP_PROXY $https_proxy $ALL_PROXY`)).out,
          "http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128",
        );
        const got = await run(sandbox, `curl -sS --max-time 10 ${a}`);
        assert.equal(got.out, "hello from 127.0.0.2", got.stderr);
        assert.equal(await refusal(sandbox, b), "X-Sandbar-Egress-Rule: allow");
        // Over SOCKS too (curl's ALL_PROXY side, the proxy deciding the same way).
        const socks = await run(sandbox, `curl -sS --max-time 10 -x "$ALL_PROXY" ${a}`);
        assert.equal(socks.out, "hello from 127.0.0.2", socks.stderr);
        // A program that ignores the proxy variables reaches nothing: the container has no
        // network but its own loopback, where nothing listens on the origin's port.
        const direct = await run(sandbox, `curl -sS --noproxy '*' --max-time 5 ${a}`);
        assert.notEqual(direct.exitCode, 0);
        assert.equal(direct.out, "");

        // Changed while it runs: now the other host only.
        assert.equal((await sandbox.network.update({ allow: ["127.0.0.3"] })).closed, 0);
        assert.equal(
          (await run(sandbox, `curl -sS --max-time 10 ${b}`)).out,
          "hello from 127.0.0.3",
        );
        assert.equal(await refusal(sandbox, a), "X-Sandbar-Egress-Rule: allow");

        // Another process finds the keeper by the container's labels.
        const env = { DOCKER_HOST: engine!.host, SANDBAR_PROVIDER: "docker" };
        const fromChild = JSON.parse(
          await runChild(
            `const s = await sdk.Sandbox.connect(${JSON.stringify(sandbox.id)});
             await s.network.update({ allow: ["127.0.0.2"] });
             console.log(JSON.stringify((await s.network.audit()).length));`,
            env,
          ),
        );
        assert.equal(fromChild, 5);
        assert.equal(
          (await run(sandbox, `curl -sS --max-time 10 ${a}`)).out,
          "hello from 127.0.0.2",
        );

        const audit = (await sandbox.network.audit()).map((e) =>
          `${e.decision} ${e.host}:${e.port} ${e.rule}`
        );
        assert.deepEqual(audit, [
          `allow 127.0.0.2:${allowed.port} allow:127.0.0.2`,
          `deny 127.0.0.3:${other.port} allow`,
          `allow 127.0.0.2:${allowed.port} allow:127.0.0.2`,
          `allow 127.0.0.3:${other.port} allow:127.0.0.3`,
          `deny 127.0.0.2:${allowed.port} allow`,
          `allow 127.0.0.2:${allowed.port} allow:127.0.0.2`,
        ]);
        // Its audit file is on the host, outside the container.
        const lines = (await Deno.readTextFile(join(dir, "egress.jsonl"))).trim().split("\n");
        assert.equal(lines.length, 6);
      } finally {
        await sandbox.kill();
      }
      assert.ok(!isAlive(ref), "the keeper is gone when kill returns");
      assert.ok(await gone(dir), "its directory is gone");
      assert.ok(await gone(join(home, "docker", sandbox.id)), "the host directory is gone");
    } finally {
      await allowed.server.shutdown();
      await other.server.shutdown();
    }
  },
});

Deno.test({
  name:
    "docker sandbox network: without `network` nothing is reached, and there is no rule to change",
  ignore,
  async fn() {
    await setUp();
    const target = origin("127.0.0.2");
    try {
      await using sandbox = await Sandbox.create(BASE_IMAGE, { provider: "docker", timeout: 120 });
      assert.equal((await run(sandbox, "echo ${HTTP_PROXY:-none}")).out, "none");
      for (
        const cmd of [
          `curl -sS --max-time 5 http://127.0.0.2:${target.port}/`,
          `curl -sS --max-time 5 -x http://127.0.0.1:3128 http://127.0.0.2:${target.port}/`,
        ]
      ) {
        const r = await run(sandbox, cmd);
        assert.notEqual(r.exitCode, 0, cmd);
        assert.equal(r.out, "", cmd);
      }
      assert.ok(await gone(join(home, "docker-egress", sandbox.id)), "no keeper");
      await assert.rejects(
        sandbox.network.update(true),
        (e: Error) => e instanceof SandboxError && /created without `network`/.test(e.message),
      );
    } finally {
      await target.server.shutdown();
    }
  },
});

Deno.test({
  name: "docker sandbox network: a rule changed while a download runs cuts it off",
  ignore,
  async fn() {
    await setUp();
    const slow = Deno.serve({ hostname: "127.0.0.2", port: 0, onListen: () => {} }, () => {
      return endlessResponse();
    });
    try {
      await using sandbox = await Sandbox.create(BASE_IMAGE, {
        provider: "docker",
        timeout: 120,
        network: { allow: ["127.0.0.2"] },
      });
      const download = await sandbox.commands.run(
        `curl -sS --max-time 60 -o /tmp/out http://127.0.0.2:${slow.addr.port}/`,
        { background: true, timeout: 0 },
      );
      let size = 0;
      for (let i = 0; i < 200 && size < 64 * 1024; i++) {
        await new Promise((r) => setTimeout(r, 50));
        size = Number((await run(sandbox, "stat -c %s /tmp/out 2>/dev/null || echo 0")).out);
      }
      assert.ok(size >= 64 * 1024, `the download ran (${size} bytes)`);
      assert.equal((await sandbox.network.update({ allow: ["127.0.0.3"] })).closed, 1);
      const result = await download.wait();
      assert.notEqual(result.exitCode, 0, "curl saw the connection cut");
      const last = (await sandbox.network.audit()).at(-1)!;
      assert.deepEqual([last.decision, last.code, last.rule], ["deny", "egress_closed", "allow"]);
    } finally {
      await slow.shutdown();
    }
  },
});

Deno.test({
  name:
    "docker sandbox network: the keeper outlives its creator and ends with the container's lifetime",
  ignore,
  async fn() {
    await setUp();
    const target = origin("127.0.0.2");
    try {
      const id = await runChild(
        `const s = await sdk.Sandbox.create(${JSON.stringify(BASE_IMAGE)}, {
           timeout: 15, network: { allow: ["127.0.0.2"] },
         });
         console.log(s.id);`,
        { DOCKER_HOST: engine!.host, SANDBAR_PROVIDER: "docker" },
      );
      const { dir, ref } = await keeper(id);
      // The creator is gone; the keeper still carries the sandbox's traffic.
      const sandbox = await Sandbox.connect(id, { provider: "docker" });
      const got = await run(sandbox, `curl -sS --max-time 10 http://127.0.0.2:${target.port}/`);
      assert.equal(got.out, "hello from 127.0.0.2", got.stderr);
      assert.ok(isAlive(ref));
      for (let i = 0; i < 150 && isAlive(ref); i++) await new Promise((r) => setTimeout(r, 200));
      assert.ok(!isAlive(ref), "the keeper ended with the container");
      assert.ok(await gone(dir), "and removed its directory");
      assert.equal(await Sandbox.killById(id, { provider: "docker" }), false);
      await Deno.remove(join(home, "docker", id), { recursive: true }).catch(() => {});
    } finally {
      await target.server.shutdown();
    }
  },
});

Deno.test({
  name:
    "docker sandbox network: a secret never enters the container; its placeholder is swapped at its host only",
  ignore,
  async fn() {
    await setUp();
    // Made now, so no file bound into the container has it.
    const secret = `real-secret-${crypto.randomUUID()}`;
    const origins = await startSecretOrigins();
    const { seenTls, seenPlain } = origins;
    try {
      // A secret so short that a placeholder would contain it is refused before anything starts.
      await assert.rejects(
        Sandbox.create(BASE_IMAGE, {
          provider: "docker",
          network: { secrets: [{ host: "api.secret.test", env: "API_TOKEN", value: "e" }] },
        }),
        (e: Error) => e instanceof ValidationError && /secrets\[0\]\.placeholder/.test(e.message),
      );
      const keepers = await Array.fromAsync(Deno.readDir(join(home, "docker-egress")))
        .catch(() => []);
      assert.deepEqual(keepers, [], "no keeper left");
      await using sandbox = await Sandbox.create(BASE_IMAGE, {
        provider: "docker",
        timeout: 180,
        network: {
          allow: ["api.secret.test", "127.0.0.3"],
          hosts: { "api.secret.test": "127.0.0.2" },
          secrets: [{ host: "api.secret.test", env: "API_TOKEN", value: secret }],
          ca: [origins.caPem],
        },
      });
      const url = `https://api.secret.test:${origins.tlsPort}/`;
      const viaCurl = await run(
        sandbox,
        `curl -sS --max-time 10 -H "Authorization: Bearer $API_TOKEN" ${url}`,
      );
      assert.equal(viaCurl.out, "ok", viaCurl.stderr);
      const viaPython = await run(
        sandbox,
        `python3 -c "import os, urllib.request as u; print(u.urlopen(u.Request('${url}', headers={'Authorization': 'Bearer ' + os.environ['API_TOKEN']})).read().decode())"`,
      );
      assert.equal(viaPython.out, "ok", viaPython.stderr);
      assert.deepEqual(seenTls, [`Bearer ${secret}`, `Bearer ${secret}`]);
      await run(
        sandbox,
        `curl -sS --max-time 10 -H "Authorization: Bearer $API_TOKEN" http://127.0.0.3:${origins.plainPort}/`,
      );
      const placeholder = (await run(sandbox, 'printf %s "$API_TOKEN"')).out;
      assert.match(placeholder, /^sandbar-placeholder-/);
      assert.deepEqual(seenPlain, [`Bearer ${placeholder}`]);
      // Nowhere inside: no process's environment or command line, no file it can read; nor in
      // the container's configuration (its environment and labels, which the engine shows).
      assert.ok(!(await everythingReadableInside(sandbox)).includes(secret));
      const inspected = await provider.engine.call<unknown>(
        "GET",
        `/containers/sandbar-${sandbox.id}/json`,
      );
      assert.ok(!JSON.stringify(inspected).includes(secret));
      const ca = (await run(sandbox, "cat /opt/sandbar/egress-ca/ca.pem")).out;
      assert.match(ca, /BEGIN CERTIFICATE/);
    } finally {
      await origins.close();
    }
  },
});
