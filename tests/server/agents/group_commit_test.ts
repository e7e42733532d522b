import assert from "node:assert/strict";
import { AgentStore } from "../../../server/agents/store.ts";
import { startAgentsServer } from "./helpers.ts";

// Creates are committed in groups: every one that is answered must be stored, and one that
// fails must fail alone.

function withStore(fn: (store: AgentStore, dir: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
    const store = AgentStore.open(dir);
    try {
      await fn(store, dir);
    } finally {
      store.close();
      await Deno.remove(dir, { recursive: true });
    }
  };
}

const ids = (store: AgentStore) =>
  store.list("agent", "", "asc", 100, undefined).rows.map((r) => r.id);

Deno.test(
  "group commit: concurrent inserts are all stored, in order, and settle only once committed",
  withStore(async (store) => {
    const want = Array.from({ length: 40 }, (_, i) => `agent_${String(i).padStart(2, "0")}`);
    const pending = want.map((id) => store.insertSoon("agent", id, "", 1, { id }, null, "default"));
    assert.deepEqual(ids(store), [], "nothing is visible before the commit");
    await Promise.all(pending);
    assert.deepEqual(ids(store), want);
  }),
);

Deno.test(
  "group commit: a failing insert fails only its own write",
  withStore(async (store) => {
    store.insert("agent", "agent_taken", "", 1, { id: "agent_taken" }, null, "default");
    const results = await Promise.allSettled(
      ["agent_a", "agent_taken", "agent_b", "agent_a", "agent_c"].map((id) =>
        store.insertSoon("agent", id, "", 1, { id }, null, "default")
      ),
    );
    assert.deepEqual(results.map((r) => r.status), [
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    for (const r of results) {
      if (r.status === "rejected") {
        assert.match(String(r.reason), /UNIQUE constraint failed: objects\.id/);
      }
    }
    assert.deepEqual(ids(store), ["agent_taken", "agent_a", "agent_b", "agent_c"]);
    assert.equal(store.inTransaction, false);
  }),
);

Deno.test("group commit: writes still waiting when the store closes are committed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  try {
    const store = AgentStore.open(dir);
    const pending = store.insertSoon(
      "agent",
      "agent_late",
      "",
      1,
      { id: "agent_late" },
      null,
      "default",
    );
    store.close();
    await pending;
    const again = AgentStore.open(dir);
    assert.deepEqual(ids(again), ["agent_late"]);
    again.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test(
  "store: a data directory another server has open is refused with the reason",
  withStore((_store, dir) => {
    assert.throws(() => AgentStore.open(dir), /in use by another process.*--data-dir/);
    return Promise.resolve();
  }),
);

Deno.test("group commit: 60 concurrent creates through the server are all answered and all listed", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const created = await Promise.all(
    Array.from({ length: 60 }, (_, i) => client.beta.agents.create({ model: "m", name: `n${i}` })),
  );
  const answered = new Set(created.map((a) => a.id));
  assert.equal(answered.size, 60);
  const listed: string[] = [];
  for await (const a of client.beta.agents.list({ limit: 25 })) listed.push(a.id);
  assert.deepEqual(new Set(listed), answered);
  for (const a of created.slice(0, 5)) assert.deepEqual(await client.beta.agents.retrieve(a.id), a);
});
