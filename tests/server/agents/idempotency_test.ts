import assert from "node:assert/strict";
import { join } from "node:path";
import { commitCreate, type IdempotencySlot } from "../../../server/agents/idempotency.ts";
import { AgentStore, DATABASE_FILE } from "../../../server/agents/store.ts";
import type { TestServer } from "../../helpers/server.ts";
import { startAgentsServer } from "./helpers.ts";
import { runtimeSetup } from "./runtime_helpers.ts";

// An Idempotency-Key's kept answer and the object it created are stored by one transaction:
// whenever the server dies, a retry finds both or neither, and never makes a second object.

/**
 * How many transactions the write-ahead log holds: its frames that end a commit (a non-zero
 * database size in the frame header), up to the first frame of an older generation (another
 * salt). The store is in WAL mode, so every commit appends exactly one such frame.
 */
async function walCommits(dir: string): Promise<number> {
  const wal = await Deno.readFile(join(dir, `${DATABASE_FILE}-wal`));
  const view = new DataView(wal.buffer);
  const pageSize = view.getUint32(8);
  const salt = [view.getUint32(16), view.getUint32(20)];
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (view.getUint32(at + 8) !== salt[0] || view.getUint32(at + 12) !== salt[1]) break;
    if (view.getUint32(at + 4) !== 0) commits++;
  }
  return commits;
}

const slot = (key: string): IdempotencySlot => ({
  identity: "default",
  endpoint: "agents_create",
  key,
  bodyHash: "hash-of-the-body",
  now: 1_800_000_000,
});

Deno.test("idempotency: the object and its kept answer are written by one commit, or not at all", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  const store = AgentStore.open(dir);
  try {
    const before = await walCommits(dir);
    const answer = { status: 200, text: '{"id":"agent_a"}' };
    await commitCreate(store, slot("k-1"), answer, () => {
      store.insert("agent", "agent_a", "", 1, answer.text, null, "default");
    });
    assert.equal(await walCommits(dir), before + 1, "one commit, so no moment holds only one");
    assert.equal(store.get("agent", "agent_a")?.id, "agent_a");
    assert.equal(store.idempotent("default", "agents_create", "k-1", 0)?.response, answer.text);

    // A create whose write fails keeps no answer: the key may be used again.
    const failed = commitCreate(store, slot("k-2"), { status: 200, text: "{}" }, () => {
      store.insert("agent", "agent_b", "", 1, "{}", null, "default");
      store.insert("agent", "agent_a", "", 1, "{}", null, "default"); // taken: the write throws
    });
    await assert.rejects(failed, /UNIQUE constraint failed: objects\.id/);
    assert.equal(store.idempotent("default", "agents_create", "k-2", 0), undefined);
    assert.equal(store.get("agent", "agent_b"), undefined, "nothing of the failed write is kept");
  } finally {
    store.close();
  }
  // Both are in the file, read by a store opened anew.
  const again = AgentStore.open(dir);
  try {
    assert.deepEqual(again.list("agent", "", "asc", 10, undefined).rows.map((r) => r.id), [
      "agent_a",
    ]);
    assert.equal(again.idempotent("default", "agents_create", "k-1", 0)?.status, 200);
  } finally {
    again.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("idempotency: a server killed (SIGKILL) right after answering a keyed create replays that answer once restarted", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-root-" });
  const create = (server: TestServer, path: string, body: unknown, key: string) =>
    server.fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(body),
    });
  try {
    // --no-narrow: the process the test starts is the one serving, so SIGKILL hits it.
    const first = await startAgentsServer({ dataDir, root, args: ["--no-narrow"] });
    const agentRes = await create(first, "/v1/agents", { model: "m", name: "kept" }, "agent-1");
    const agentText = await agentRes.text();
    const vaultRes = await create(first, "/v1/vaults", { name: "v" }, "vault-1");
    const vaultText = await vaultRes.text();
    const sessionBody = { environment: { type: "none" }, agent: { model: "m" } };
    const sessionRes = await create(first, "/v1/agents/sessions", sessionBody, "session-1");
    const sessionText = await sessionRes.text();
    Deno.kill(first.pid, "SIGKILL");
    await first.close();
    assert.equal(agentRes.status, 200);
    assert.equal(vaultRes.status, 200);
    assert.equal(sessionRes.status, 200, sessionText);

    await using second = await startAgentsServer({ dataDir, root, args: ["--no-narrow"] });
    const retry = await create(second, "/v1/agents", { model: "m", name: "kept" }, "agent-1");
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.equal(await retry.text(), agentText, "the first answer, as it was sent");
    const agents = await second.client.beta.agents.list();
    assert.deepEqual(agents.data.map((a) => a.id), [JSON.parse(agentText).id]);
    const vaultRetry = await create(second, "/v1/vaults", { name: "v" }, "vault-1");
    assert.equal(await vaultRetry.text(), vaultText);
    const vaults = await second.client.beta.agents.vaults.list();
    assert.deepEqual(vaults.data.map((v) => v.id), [JSON.parse(vaultText).id]);
    const sessionRetry = await create(second, "/v1/agents/sessions", sessionBody, "session-1");
    assert.equal(await sessionRetry.text(), sessionText);
    const sessions = await second.client.beta.agents.sessions.list();
    assert.deepEqual(sessions.data.map((v) => v.id), [JSON.parse(sessionText).id]);
    const other = await create(second, "/v1/agents", { model: "m", name: "other" }, "agent-1");
    assert.equal(other.status, 409, "another body with the key is still refused");
    await other.body?.cancel();
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("idempotency: a keyed session create with input, sent 3 times at once, makes one session and runs one turn", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  upstream.script.push({ output: [{ type: "message", text: "Hello." }] });
  const headers = { "Idempotency-Key": "session-with-input" };
  const body = {
    environment: { type: "none" as const },
    agent: { model: "gpt-test" },
    input: "Hi",
  };
  const sessions = await Promise.all(
    [1, 2, 3].map(() => client.beta.agents.sessions.create(body, { headers })),
  );
  assert.equal(new Set(sessions.map((s) => s.id)).size, 1);
  assert.deepEqual(sessions[1], sessions[0], "the retries replay the first answer");
  assert.deepEqual((await client.beta.agents.sessions.list()).data.map((s) => s.id), [
    sessions[0].id,
  ]);
  const turns = [];
  for await (const turn of client.beta.agents.sessions.turns.list(sessions[0].id)) {
    turns.push(turn);
  }
  assert.equal(turns.length, 1, "one turn, for the first request only");
  await upstream.modelCall(1);
});

Deno.test("idempotency: through the server, a keyed create is one commit of the store, and its replay none", async () => {
  await using server = await startAgentsServer();
  const creates: [string, unknown][] = [
    ["/v1/agents", { model: "m" }],
    ["/v1/vaults", { name: "v" }],
    ["/v1/agents/sessions", { environment: { type: "none" }, agent: { model: "m" } }],
    // Its files are written into its workspace first; record, files' records and key commit once.
    ["/v1/agents/environments", {
      environment: {
        type: "openai_hosted",
        files: [{ type: "inline", path: "/workspace/notes/a.txt", data: btoa("hello") }],
      },
    }],
  ];
  for (const [path, body] of creates) {
    const send = () =>
      server.fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": `key ${path}` },
        body: JSON.stringify(body),
      });
    const before = await walCommits(server.dataDir);
    const first = await send();
    assert.equal(first.status, 200, await first.clone().text());
    assert.equal(await walCommits(server.dataDir), before + 1, `${path}: one commit`);
    const replay = await send();
    assert.equal(await replay.text(), await first.text());
    assert.equal(
      await walCommits(server.dataDir),
      before + 1,
      `${path}: the replay writes nothing`,
    );
  }
});
