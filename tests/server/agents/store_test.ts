import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { startTestServer } from "../../helpers/server.ts";
import { startAgentsServer } from "./helpers.ts";

async function seed(server: Awaited<ReturnType<typeof startAgentsServer>>) {
  const { client } = server;
  const agent = await client.beta.agents.create({ model: "m", name: "kept" });
  const vault = await client.beta.agents.vaults.create({ name: "kept" });
  const cred = await client.beta.agents.vaults.credentials.create(vault.id, {
    name: "k",
    auth: {
      type: "static_bearer",
      token: "sk-restart-secret-0123",
      mcp_server_url: "https://m.example/",
    },
  });
  const keyed = await client.beta.agents.create({ model: "m" }, {
    headers: { "Idempotency-Key": "k-restart" },
  });
  const template = await client.beta.agents.environments.templates.create({
    name: "kept",
    setup_commands: [{ command: "echo seeded > seeded.txt" }],
  });
  const environment = await client.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      files: [{ type: "inline", path: "/workspace/kept.txt", data: btoa("kept") }],
    },
  });
  const file = await client.files.create({
    file: new File(["kept bytes"], "kept.txt"),
    purpose: "user_data",
  });
  return { agent, vault, cred, keyed, template, environment, file };
}

async function verify(
  server: Awaited<ReturnType<typeof startAgentsServer>>,
  seeded: Awaited<ReturnType<typeof seed>>,
) {
  const { client } = server;
  assert.deepEqual(await client.beta.agents.retrieve(seeded.agent.id), seeded.agent);
  assert.deepEqual(await client.beta.agents.vaults.retrieve(seeded.vault.id), seeded.vault);
  assert.deepEqual(
    await client.beta.agents.vaults.credentials.retrieve(seeded.cred.id, {
      vault_id: seeded.vault.id,
    }),
    seeded.cred,
  );
  // The idempotency key outlives the restart: the retry answers the first agent again.
  const again = await client.beta.agents.create({ model: "m" }, {
    headers: { "Idempotency-Key": "k-restart" },
  });
  assert.deepEqual(again, seeded.keyed);
  assert.equal((await client.beta.agents.list()).data.length, 2);
  assert.deepEqual(
    await client.beta.agents.environments.templates.retrieve(seeded.template.id),
    seeded.template,
  );
  assert.deepEqual(
    await client.beta.agents.environments.retrieve(seeded.environment.id),
    seeded.environment,
  );
  assert.deepEqual(await client.files.retrieve(seeded.file.id), seeded.file);
  assert.equal(await (await client.files.content(seeded.file.id)).text(), "kept bytes");
  // The template's sealed setup still opens and seeds a new environment.
  const seededEnv = await client.beta.agents.environments.create({
    environment: { type: "openai_hosted", environment_template_id: seeded.template.id },
  });
  assert.equal(seededEnv.status, "pending");
  // The sealed secret still opens with the key in the data directory: rotation reads it.
  await client.beta.agents.vaults.credentials.update(seeded.cred.id, {
    vault_id: seeded.vault.id,
    auth: { type: "static_bearer", token: "sk-restart-rotated-0123" },
  });
}

Deno.test("store: everything intact after SIGTERM and a restart on the same data directory", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-root-" });
  try {
    const first = await startAgentsServer({ dataDir, root });
    const seeded = await seed(first);
    await first.close(); // SIGTERM, through the launcher
    await using second = await startAgentsServer({ dataDir, root });
    await verify(second, seeded);
    const workspace = `${root}/agent-environments/${seeded.environment.id}`;
    assert.equal(await Deno.readTextFile(`${workspace}/kept.txt`), "kept");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("store: an environment whose setup a stop interrupted comes back failed, saying why", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  try {
    const first = await startAgentsServer({ dataDir });
    const env = await first.client.beta.agents.environments.create({
      environment: { type: "openai_hosted", setup_commands: [{ command: "sleep 600" }] },
    });
    assert.equal(env.status, "pending");
    await first.close();
    await using second = await startAgentsServer({ dataDir });
    const after = await second.client.beta.agents.environments.retrieve(env.id) as
      & typeof env
      & { error: { code: string; message: string } };
    assert.equal(after.status, "failed");
    assert.equal(after.error.code, "server_error");
    assert.match(after.error.message, /server stopped while this environment was being set up/);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("store: everything intact after SIGKILL of the serving process", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  try {
    // --no-narrow: the process the test starts is the one serving, so SIGKILL hits it.
    const first = await startAgentsServer({ dataDir, args: ["--no-narrow"] });
    const seeded = await seed(first);
    Deno.kill(first.pid, "SIGKILL");
    await first.close();
    await using second = await startAgentsServer({ dataDir });
    await verify(second, seeded);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("store: a store written by a newer sandbar is refused with the reason, unchanged", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  try {
    const first = await startAgentsServer({ dataDir });
    await first.client.beta.agents.create({ model: "m" });
    await first.close();
    const db = new DatabaseSync(`${dataDir}/agents.sqlite`);
    db.exec("PRAGMA user_version = 99");
    db.close();
    const before = await Deno.readFile(`${dataDir}/agents.sqlite`);
    const failed = await startAgentsServer({ dataDir }).then(
      async (s) => {
        await s.close();
        return "";
      },
      (e: Error) => e.message,
    );
    assert.match(failed, /schema version 99, written by a newer sandbar/);
    assert.match(failed, /--data-dir/);
    assert.deepEqual(await Deno.readFile(`${dataDir}/agents.sqlite`), before);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("store: a changed SANDBAR_SECRET_KEY is refused at start, not discovered later", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  try {
    const first = await startAgentsServer({
      dataDir,
      env: { SANDBAR_SECRET_KEY: "first-secret-key-0123456789" },
    });
    await first.client.beta.agents.vaults.create({});
    await first.close();
    const failed = await startAgentsServer({
      dataDir,
      env: { SANDBAR_SECRET_KEY: "other-secret-key-0123456789" },
    }).then(async (s) => {
      await s.close();
      return "";
    }, (e: Error) => e.message);
    assert.match(failed, /sealed with another key/);
    // No key file was made: the secret came from the environment.
    await assert.rejects(Deno.stat(`${dataDir}/store.key`));
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("store: the key file is created owner-only", async () => {
  await using server = await startAgentsServer();
  const info = await Deno.stat(`${server.dataDir}/store.key`);
  assert.equal(info.mode! & 0o777, 0o600);
  assert.equal(info.size, 32);
});

Deno.test("paths: every file endpoint refuses the data directory, whatever paths.allow says", async () => {
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-root-" });
  const dataDir = `${root}/.sandbar-data`;
  try {
    await using server = await startAgentsServer({ root, dataDir });
    await server.client.beta.agents.create({ model: "m" });
    for (
      const [method, path] of [
        ["GET", `/files?path=${dataDir}/agents.sqlite`],
        ["GET", `/files/stat?path=.sandbar-data/store.key`],
        ["GET", `/files/list?path=${dataDir}`],
        ["DELETE", `/files?path=${dataDir}/agents.sqlite`],
      ]
    ) {
      const res = await server.fetch(path, { method });
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal((await res.json()).code, "path_denied");
    }
    const up = await server.fetch(`/files?path=${dataDir}/agents.sqlite`, {
      method: "POST",
      body: "overwrite",
    });
    assert.equal(up.status, 403);
    // A link inside the workspace pointing at it is refused too.
    await Deno.symlink(`${dataDir}/store.key`, `${root}/link`);
    const viaLink = await server.fetch(`/files?path=${root}/link`);
    assert.equal(viaLink.status, 403);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("agents group off: no store is opened and no data directory made", async () => {
  const parent = await Deno.makeTempDir();
  const dataDir = `${parent}/never`;
  try {
    await using server = await startTestServer({ args: ["--data-dir", dataDir] });
    const res = await server.fetch("/v1/agents");
    assert.equal(res.status, 404);
    await assert.rejects(Deno.stat(dataDir));
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("paths: a data directory named through a link is refused by its real path too", async () => {
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-root-" });
  const outside = await Deno.makeTempDir({ prefix: "sandbar-test-link-" });
  try {
    await Deno.mkdir(`${root}/real-data`);
    await Deno.symlink(`${root}/real-data`, `${outside}/data`);
    // A half-written upload from a server that stopped mid-upload.
    await Deno.mkdir(`${root}/real-data/files`);
    await Deno.writeTextFile(`${root}/real-data/files/.upload-file-stale`, "partial");
    await using server = await startAgentsServer({
      root,
      dataDir: `${outside}/data`,
      policy: { endpoints: { agents: true }, paths: { symlinks: "allow" } },
    });
    await server.client.beta.agents.create({ model: "m" });
    const res = await server.fetch(`/files?path=${root}/real-data/agents.sqlite`);
    assert.equal(res.status, 403);
    assert.equal((await res.json()).code, "path_denied");
    await assert.rejects(Deno.stat(`${root}/real-data/files/.upload-file-stale`));
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});
