/**
 * A data directory written before tenants (schema version 2, the store as the old migration list
 * made it, with rows as the old code inserted them) opened by this sandbar: nothing is lost,
 * every row belongs to the default identity, an automation another identity had made is paused
 * rather than run under the default identity's policy, and the store's files come out private
 * (0600 in a 0700 directory) whatever modes they had.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import OpenAI from "openai";
import { MIGRATIONS } from "../../../server/agents/migrations.ts";
import { AgentStore, DATABASE_FILE } from "../../../server/agents/store.ts";
import { startAgentsServer } from "./helpers.ts";

const LOW = "low-token-0123456789abcdef";
const POLICY = {
  endpoints: { agents: true },
  identities: [{ id: "low", token: LOW, scopes: ["agents:read", "agents:write"] }],
};

/** A version-2 store with a few rows of each kind, as the code before tenants wrote them. */
function oldStore(dir: string): void {
  const db = new DatabaseSync(`${dir}/${DATABASE_FILE}`);
  db.exec("PRAGMA journal_mode = WAL");
  for (const m of MIGRATIONS.slice(0, 2)) db.exec(m);
  db.exec("PRAGMA user_version = 2");
  const insert = db.prepare(
    "INSERT INTO objects (id, kind, parent, created_at, body) VALUES (?, ?, ?, ?, ?)",
  );
  const row = (kind: string, id: string, parent: string, body: Record<string, unknown>) =>
    insert.run(id, kind, parent, 1, JSON.stringify({ id, ...body }));
  for (let i = 0; i < 3; i++) {
    row("agent", `agent_${i}`, "", { object: "agent", name: `old-${i}`, metadata: {} });
  }
  row("vault", "vault_1", "", { object: "vault", name: "old-vault", metadata: {} });
  row("session", "session_1", "", {
    object: "agent.session",
    metadata: {},
    vault_ids: [],
    _agent_id: "",
    _internal: { owner: "low", environment_id: null },
  });
  row("turn", "turn_1", "session_1", { object: "agent.session.turn", status: "completed" });
  for (const [id, owner] of [["automation_low", "low"], ["automation_default", "default"]]) {
    row("automation", id, "", {
      object: "agent.automation",
      status: "active",
      _session_id: "",
      _internal: { owner, next_at: null },
    });
  }
  db.close();
}

Deno.test("tenants migration: an old store opens with every row the default identity's, nothing lost, another's automation paused", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-old-store-" });
  try {
    oldStore(dataDir);
    // Readable by others, as the old code left them.
    await Deno.chmod(dataDir, 0o755);
    await Deno.chmod(`${dataDir}/${DATABASE_FILE}`, 0o644);

    {
      await using server = await startAgentsServer({ dataDir, policy: POLICY });
      const low = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: LOW, maxRetries: 0 });
      const names = (await server.client.beta.agents.list({ order: "asc" })).data.map((a) =>
        a.name
      );
      assert.deepEqual(names, ["old-0", "old-1", "old-2"]);
      assert.deepEqual((await low.beta.agents.list()).data, []);
      const e = await low.beta.agents.vaults.retrieve("vault_1").catch((e) => e);
      assert.equal(e.status, 404);
      assert.equal((await server.client.beta.agents.vaults.retrieve("vault_1")).name, "old-vault");
      assert.equal(
        (await server.client.beta.agents.sessions.retrieve("session_1")).id,
        "session_1",
      );
      // The store's files are private now, the directory too.
      for (const name of [DATABASE_FILE, `${DATABASE_FILE}-wal`]) {
        const st = await Deno.stat(`${dataDir}/${name}`);
        assert.equal(st.mode! & 0o777, 0o600, name);
      }
      assert.equal((await Deno.stat(dataDir)).mode! & 0o777, 0o700);
    }

    const store = AgentStore.open(dataDir);
    try {
      for (
        const [kind, id] of [
          ["agent", "agent_0"],
          ["vault", "vault_1"],
          ["session", "session_1"],
          ["turn", "turn_1"],
          ["automation", "automation_low"],
          ["automation", "automation_default"],
        ]
      ) {
        const found = store.get(kind, id);
        assert.equal(found?.owner, "default", `${kind} ${id}`);
        assert.equal(store.get(kind, id, undefined, "low"), undefined);
      }
      const session = store.get("session", "session_1")!.body as {
        _internal: { owner: string };
      };
      assert.equal(session._internal.owner, "default", "its turns run as its owner");
      const paused = store.get("automation", "automation_low")!.body;
      assert.equal(paused.status, "paused");
      assert.equal((paused._internal as { owner: string }).owner, "default");
      assert.equal(store.get("automation", "automation_default")!.body.status, "active");
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("data directory: the store, its WAL, the key and uploads are created 0600 in 0700 directories", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  await client.beta.agents.create({ model: "gpt-test", name: "a" });
  await client.beta.agents.vaults.create({ name: "v" });
  await client.files.create({
    file: new File([new TextEncoder().encode("data")], "a.txt"),
    purpose: "user_data",
  });
  const seen: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      const st = await Deno.lstat(path);
      seen.push(e.name);
      if (st.isDirectory) {
        assert.equal(st.mode! & 0o777, 0o700, path);
        await walk(path);
      } else {
        assert.equal(st.mode! & 0o777, 0o600, path);
      }
    }
  };
  assert.equal((await Deno.stat(server.dataDir)).mode! & 0o777, 0o700);
  await walk(server.dataDir);
  for (const name of [DATABASE_FILE, `${DATABASE_FILE}-wal`, "store.key", "files"]) {
    assert.ok(seen.includes(name), `${name} among ${seen}`);
  }
});
