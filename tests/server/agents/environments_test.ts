import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { rejection, settled, startAgentsServer } from "./helpers.ts";

const b64 = (s: string) => btoa(s);

Deno.test("environments: files materialised, list across pages both orders, retrieve, 404", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const uploaded = await client.files.create({
    file: await toFile(new TextEncoder().encode("from files api"), "data.txt"),
    purpose: "user_data",
  });
  const env = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      files: [
        { type: "inline", path: "/workspace/src/main.py", data: b64("print('hi')\n") },
        { type: "file_id", path: "/workspace/data/input.txt", file_id: uploaded.id },
      ],
    },
  });
  assert.match(env.id, /^env_/);
  assert.equal(env.object, "agent.environment");
  assert.equal(env.type, "openai_hosted");
  assert.equal(env.status, "ready");
  assert.deepEqual(env.files.map((f) => [f.type, f.path, f.size_bytes]), [
    ["inline", "/workspace/src/main.py", 12],
    ["file_id", "/workspace/data/input.txt", 14],
  ]);
  const dir = `${server.root}/agent-environments/${env.id}`;
  assert.equal(await Deno.readTextFile(`${dir}/src/main.py`), "print('hi')\n");
  assert.equal(await Deno.readTextFile(`${dir}/data/input.txt`), "from files api");
  assert.deepEqual(await client.beta.agents.environments.retrieve(env.id), env);

  const ids = [env.id];
  for (let i = 0; i < 5; i++) {
    ids.push(
      (await client.beta.agents.environments.create({ environment: { type: "openai_hosted" } })).id,
    );
  }
  const desc: string[] = [];
  for await (const e of client.beta.agents.environments.list({ limit: 2 })) desc.push(e.id);
  assert.deepEqual(desc, [...ids].reverse());
  const asc: string[] = [];
  for await (const e of client.beta.agents.environments.list({ limit: 2, order: "asc" })) {
    asc.push(e.id);
  }
  assert.deepEqual(asc, ids);
  const page = await client.beta.agents.environments.list({ limit: 2, order: "asc" });
  assert.equal(page.first_id, ids[0]);
  assert.equal(page.last_id, ids[1]);

  const missing = await rejection(() => client.beta.agents.environments.retrieve("env_nope"));
  assert.ok(missing instanceof OpenAI.NotFoundError);
  assert.equal(missing.param, "environment_id");
  const noFile = await rejection(() =>
    client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        files: [{ type: "file_id", path: "/workspace/x", file_id: "file-nope" }],
      },
    })
  );
  assert.equal(noFile.param, "environment.files[0].file_id");
  const badPath = await rejection(() =>
    client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        files: [{ type: "inline", path: "/etc/passwd", data: b64("x") }],
      },
    })
  );
  assert.equal(badPath.param, "environment.files[0].path");
  // A field that is there in the wrong shape is invalid, not missing.
  const badPackages = await rejection(() =>
    client.beta.agents.environments.create({
      environment: { type: "openai_hosted", packages: ["numpy"] as never },
    })
  );
  assert.equal(badPackages.param, "environment.packages");
  assert.match(String(badPackages.message), /Invalid 'environment\.packages': .*expected object/);
  assert.doesNotMatch(String(badPackages.message), /Missing/);
});

Deno.test("environments: env refuses PATH, CODEX_*, OPENAI_API_KEY and what the env guard refuses", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  for (const name of ["PATH", "CODEX_HOME", "OPENAI_API_KEY", "LD_PRELOAD", "SANDBAR_SECRET_KEY"]) {
    const e = await rejection(() =>
      client.beta.agents.environments.create({
        environment: { type: "openai_hosted", env: { [name]: "x" } },
      })
    );
    assert.equal(e.status, 403, name);
    assert.match(String(e.param), /^environment\.env/, name);
    assert.match(
      String((e.error as { message: string }).message),
      new RegExp(name.replace("*", "")),
      name,
    );
  }
  assert.equal((await client.beta.agents.environments.list()).data.length, 0, "nothing half made");
});

Deno.test("environments: setup commands run with env; a failing one makes it failed with its output", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const ok = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      env: { GREETING: "hello from env" },
      setup_commands: [
        { command: 'mkdir -p build && echo "$GREETING" > build/greeting.txt' },
        { command: "pwd > where.txt", cwd: "/workspace/build" },
      ],
    },
  });
  assert.equal(ok.status, "pending");
  const ready = await settled(client, ok.id);
  assert.equal(ready.status, "ready", JSON.stringify(ready));
  const dir = `${server.root}/agent-environments/${ok.id}`;
  assert.equal(await Deno.readTextFile(`${dir}/build/greeting.txt`), "hello from env\n");
  assert.equal((await Deno.readTextFile(`${dir}/build/where.txt`)).trim(), `${dir}/build`);
  assert.ok(!JSON.stringify(ready).includes("hello from env"), "env values are not returned");

  const bad = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      setup_commands: [{ command: "echo before" }, { command: "echo broken >&2; exit 3" }, {
        command: "touch never",
      }],
    },
  });
  const failed = await settled(client, bad.id);
  assert.equal(failed.status, "failed");
  assert.equal(failed.error?.code, "setup_command_failed");
  assert.match(failed.error!.message, /setup_commands\[1\].*exited with 3/);
  assert.match(failed.error!.message, /broken/);
  await assert.rejects(Deno.stat(`${server.root}/agent-environments/${bad.id}/never`));
});

Deno.test("environments: network disabled really cuts the network; enabled reaches it", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const accepted = (async () => {
    const conn = await listener.accept();
    const buf = new Uint8Array(16);
    const n = await conn.read(buf);
    conn.close();
    return new TextDecoder().decode(buf.subarray(0, n ?? 0));
  })();
  const command = `echo hi > /dev/tcp/127.0.0.1/${port}`;
  const off = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      network: { access: "disabled" },
      setup_commands: [{ command }],
    },
  });
  const offDone = await settled(client, off.id);
  assert.equal(offDone.status, "failed", "the command could not connect");
  assert.match(offDone.error!.message, /exited with 1/);
  const on = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      network: { access: "enabled" },
      setup_commands: [{ command }],
    },
  });
  assert.equal((await settled(client, on.id)).status, "ready");
  assert.equal(await accepted, "hi\n");
  listener.close();
  assert.deepEqual((offDone as unknown as { network: unknown }).network, {
    access: "disabled",
    allowed_domains: [],
  });
  // "restricted" is honoured: environments_network_test.ts.
});

Deno.test("environments: setup runs under the caller's policy (scope, command guard, packages)", async () => {
  await using server = await startAgentsServer({
    policy: {
      endpoints: { agents: true },
      deny_commands: ["apt-get", "curl"],
      identities: [{ id: "agentonly", token: "agent-only-token-0123456789", scopes: ["agents:*"] }],
    },
  });
  const { client } = server;
  const denied = await rejection(() =>
    client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        setup_commands: [{ command: "curl https://example.com" }],
      },
    })
  );
  assert.equal(denied.status, 403);
  assert.equal((denied.error as { code: string }).code, "command_not_allowed");
  assert.equal(denied.param, "environment.setup_commands[0].command");
  const apt = await rejection(() =>
    client.beta.agents.environments.create({
      environment: { type: "openai_hosted", packages: { system: ["jq"] } },
    })
  );
  assert.equal((apt.error as { code: string }).code, "process_denied");
  assert.equal(apt.param, "environment.packages.system");
  const injected = await rejection(() =>
    client.beta.agents.environments.create({
      environment: { type: "openai_hosted", packages: { npm: ["--global"] } },
    })
  );
  assert.equal(injected.param, "packages.npm[0]");
  const venv = await rejection(() =>
    client.beta.agents.environments.create({
      environment: { type: "openai_hosted", packages: { python: ["requests"] } },
    })
  );
  assert.equal(venv.param, "environment.packages.python");
  assert.match(String(venv.message), /first on PATH, which this policy's command rules forbid/);

  const agentOnly = new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: "agent-only-token-0123456789",
    maxRetries: 0,
  });
  const noScope = await rejection(() =>
    agentOnly.beta.agents.environments.create({
      environment: { type: "openai_hosted", setup_commands: [{ command: "true" }] },
    })
  );
  assert.equal(noScope.status, 403);
  assert.equal((noScope.error as { code: string }).code, "missing_scope");
  // Without commands, the same caller may make one.
  assert.equal(
    (await agentOnly.beta.agents.environments.create({ environment: { type: "openai_hosted" } }))
      .status,
    "ready",
  );
});

Deno.test("environments.files: upload of a real file, list as TokenPage across pages, path filter", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const env = await client.beta.agents.environments.create({
    environment: { type: "openai_hosted" },
  });
  const local = await Deno.makeTempFile();
  await Deno.writeTextFile(local, "real bytes on disk\n");
  const { uploadedFile, environmentFile } = await client.beta.agents.environments.files.upload(
    env.id,
    {
      file: await toFile(await Deno.readFile(local), "notes.txt"),
      path: "/workspace/docs/notes.txt",
    },
  );
  await Deno.remove(local);
  assert.equal(uploadedFile.purpose, "user_data");
  assert.deepEqual(environmentFile, {
    environment_id: env.id,
    object: "agent.environment.file",
    path: "/workspace/docs/notes.txt",
    size_bytes: 19,
  });
  assert.equal(
    await Deno.readTextFile(`${server.root}/agent-environments/${env.id}/docs/notes.txt`),
    "real bytes on disk\n",
  );
  for (const name of ["a", "b", "c"]) {
    await client.beta.agents.environments.files.create(env.id, {
      type: "inline",
      path: `/workspace/src/${name}.ts`,
      data: btoa(name),
    });
  }
  const all: string[] = [];
  for await (
    const f of client.beta.agents.environments.files.list(env.id, { limit: 1, order: "asc" })
  ) {
    all.push(f.path);
  }
  assert.deepEqual(all, [
    "/workspace/docs/notes.txt",
    "/workspace/src/a.ts",
    "/workspace/src/b.ts",
    "/workspace/src/c.ts",
  ]);
  const raw = await (await server.fetch(`/v1/agents/environments/${env.id}/files?limit=2`)).json();
  assert.deepEqual(Object.keys(raw).sort(), ["data", "has_more", "next", "object"]);
  assert.equal(raw.has_more, true);
  assert.equal(typeof raw.next, "string");
  const src: string[] = [];
  for await (
    const f of client.beta.agents.environments.files.list(env.id, {
      path: "/workspace/src/",
      limit: 2,
    })
  ) {
    src.push(f.path);
  }
  assert.deepEqual(src, ["/workspace/src/c.ts", "/workspace/src/b.ts", "/workspace/src/a.ts"]);
  const badPage = await rejection(() =>
    client.beta.agents.environments.files.list(env.id, { page: "bm9wZQ" } as never)
  );
  assert.equal(badPage.param, "page");
  const gone = await rejection(() => client.beta.agents.environments.files.list("env_nope"));
  assert.ok(gone instanceof OpenAI.NotFoundError);
});

Deno.test("templates: CRUD, env and setup_commands never returned, seeding an environment that runs them", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const templates = client.beta.agents.environments.templates;
  const t = await templates.create({
    name: "python",
    env: { SECRET_TOKEN: "tpl-secret-value-1234" },
    files: [{ type: "inline", path: "/workspace/seed.txt", data: btoa("seeded") }],
    setup_commands: [{ command: 'echo "$SECRET_TOKEN" > token.txt && cat seed.txt > copy.txt' }],
    packages: { python: ["requests"] },
  });
  assert.match(t.id, /^envtpl_/);
  assert.equal(t.object, "agent.environment.template");
  assert.deepEqual(t.files, [{ type: "inline", path: "/workspace/seed.txt", size_bytes: 6 }]);
  assert.deepEqual(t.packages, { npm: [], python: ["requests"], system: [] });
  const text = JSON.stringify([t, await templates.retrieve(t.id), (await templates.list()).data]);
  assert.ok(!text.includes("tpl-secret-value-1234") && !text.includes("SECRET_TOKEN"));
  assert.ok(!text.includes("setup_commands") && !text.includes("token.txt"));

  const updated = await templates.update(t.id, { name: "python-3", packages: null });
  assert.equal(updated.name, "python-3");
  assert.deepEqual(updated.files, t.files, "omitted fields unchanged");
  assert.deepEqual(updated.packages, { npm: [], python: [], system: [] });

  const env = await client.beta.agents.environments.create({
    environment: { type: "openai_hosted", environment_template_id: t.id },
  });
  assert.equal((await settled(client, env.id)).status, "ready");
  const dir = `${server.root}/agent-environments/${env.id}`;
  assert.equal(await Deno.readTextFile(`${dir}/token.txt`), "tpl-secret-value-1234\n");
  assert.equal(await Deno.readTextFile(`${dir}/copy.txt`), "seeded");

  const ids = [t.id];
  for (let i = 0; i < 4; i++) ids.push((await templates.create({ name: `t${i}` })).id);
  const asc: string[] = [];
  for await (const x of templates.list({ limit: 2, order: "asc" })) asc.push(x.id);
  assert.deepEqual(asc, ids);
  const desc: string[] = [];
  for await (const x of templates.list({ limit: 2 })) desc.push(x.id);
  assert.deepEqual(desc, [...ids].reverse());

  assert.deepEqual(await templates.delete(t.id), {
    id: t.id,
    deleted: true,
    object: "agent.environment.template.deleted",
  });
  assert.ok(await rejection(() => templates.retrieve(t.id)) instanceof OpenAI.NotFoundError);
  const unseeded = await rejection(() =>
    client.beta.agents.environments.create({
      environment: { type: "openai_hosted", environment_template_id: t.id },
    })
  );
  assert.equal(unseeded.param, "environment.environment_template_id");
  const badEnv = await rejection(() => templates.create({ env: { PATH: "/tmp" } }));
  assert.equal(badEnv.param, "env.PATH");
});

Deno.test("environments: Idempotency-Key makes one environment", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const params = {
    environment: {
      type: "openai_hosted" as const,
      files: [{ type: "inline" as const, path: "/workspace/a", data: btoa("a") }],
    },
    "Idempotency-Key": "env-1",
  };
  const first = await client.beta.agents.environments.create(params);
  const again = await client.beta.agents.environments.create(params);
  assert.deepEqual(again, first);
  assert.equal((await client.beta.agents.environments.list()).data.length, 1);
});

Deno.test("environments: packages install through the process layer; a failed install fails it", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const env = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      // No index: pip answers at once, without the network, that the package does not exist.
      env: { PIP_NO_INDEX: "1" },
      packages: { python: ["sandbar-no-such-package-xyz"] },
      setup_commands: [{ command: "touch after-packages" }],
    },
  });
  assert.deepEqual((env as unknown as { packages: unknown }).packages, {
    npm: [],
    python: ["sandbar-no-such-package-xyz"],
    system: [],
  });
  const done = await settled(client, env.id);
  assert.equal(done.status, "failed");
  assert.match(
    done.error!.message,
    /^packages\.python \(\.venv\/bin\/python -m pip install sandbar-no-such-package-xyz\) exited with 1/,
  );
  assert.match(done.error!.message, /sandbar-no-such-package-xyz/);
  await assert.rejects(Deno.stat(`${server.root}/agent-environments/${env.id}/after-packages`));
});
