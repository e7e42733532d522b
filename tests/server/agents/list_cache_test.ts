import assert from "node:assert/strict";
import OpenAI from "openai";
import { listPageText, pageRequest } from "../../../server/agents/pagination.ts";
import { parseQuery } from "../../../server/agents/v1_request_reader.ts";
import { AgentStore } from "../../../server/agents/store.ts";
import { startAgentsServer } from "./helpers.ts";

// List pages are answered from a cache kept until the store's next write: every write must be
// seen by the very next list of whoever may see it (an operator), and by nobody else (a tenant
// that asks the same page gets its own, empty).

const READER = "reader-token-0123456789";
const TENANT = "tenant-token-0123456789";

Deno.test("list cache: create, update and delete by one identity are seen by the next list of an operator, never by another tenant", async () => {
  await using server = await startAgentsServer({
    policy: {
      endpoints: { agents: true },
      identities: [
        { id: "reader", token: READER, scopes: ["agents:read", "agents:admin"] },
        { id: "tenant", token: TENANT, scopes: ["agents:read"] },
      ],
    },
  });
  const writer = server.client;
  const reader = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: READER, maxRetries: 0 });
  const tenant = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TENANT, maxRetries: 0 });
  const operatorNames = async () =>
    (await reader.beta.agents.list({ limit: 5 })).data.map((a) => a.name);
  const names = async () => {
    const seen = await operatorNames();
    // The same page right after, by a tenant: its own (none), never the operator's kept page.
    assert.deepEqual((await tenant.beta.agents.list({ limit: 5 })).data, []);
    return seen;
  };

  assert.deepEqual(await names(), []);
  assert.deepEqual(await names(), [], "asked twice: the second from the cache");
  const a = await writer.beta.agents.create({ model: "m", name: "a" });
  assert.deepEqual(await names(), ["a"], "a create is seen by the next list");
  const b = await writer.beta.agents.create({ model: "m", name: "b" });
  assert.deepEqual(await names(), ["b", "a"]);
  await writer.beta.agents.update(a.id, { name: "a2" });
  assert.deepEqual(await names(), ["b", "a2"], "an update is seen by the next list");
  await writer.beta.agents.delete(b.id);
  assert.deepEqual(await names(), ["a2"], "a delete is seen by the next list");

  // A page after a cursor, then a write that moves what follows it.
  const c = await writer.beta.agents.create({ model: "m", name: "c" });
  const asc = async () =>
    (await reader.beta.agents.list({ after: a.id, order: "asc" })).data.map((x) => x.id);
  assert.deepEqual(await asc(), [c.id]);
  const d = await writer.beta.agents.create({ model: "m", name: "d" });
  assert.deepEqual(await asc(), [c.id, d.id]);
  // The cursor's object deleted: the same query is now refused, not answered from the cache.
  await writer.beta.agents.delete(a.id);
  const refused = await reader.beta.agents.list({ after: a.id, order: "asc" }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(refused instanceof OpenAI.BadRequestError);
  assert.equal((refused.error as { param: string }).param, "after");
});

Deno.test("list cache: a refused query is refused every time; spellings of one page agree", async () => {
  await using server = await startAgentsServer();
  for (const query of ["limit=0", "bogus=1", "order=up", "after=agent_nope"]) {
    for (let i = 0; i < 2; i++) {
      const res = await server.fetch(`/v1/agents?${query}`);
      assert.equal(res.status, 400, `${query}, time ${i + 1}`);
      await res.body?.cancel();
    }
  }
  const ids = async (query: string) =>
    (await (await server.fetch(`/v1/agents${query}`)).json()).data.map((a: { id: string }) => a.id);
  assert.deepEqual(await ids(""), []);
  assert.deepEqual(await ids("?limit=20&order=desc"), []);
  const a = await server.client.beta.agents.create({ model: "m" });
  for (const query of ["", "?limit=20&order=desc", "?order=desc", "?limit=20"]) {
    assert.deepEqual(await ids(query), [a.id], query);
  }
});

Deno.test("list cache: filters and parents are part of the key", async () => {
  await using server = await startAgentsServer();
  const vaults = server.client.beta.agents.vaults;
  const byTeam = async (team: string) =>
    (await vaults.list({ metadata: { team } } as never)).data.map((v) => v.name);
  assert.deepEqual(await byTeam("a"), []);
  assert.deepEqual(await byTeam("b"), []);
  await vaults.create({ name: "va", metadata: { team: "a" } });
  assert.deepEqual(await byTeam("a"), ["va"]);
  assert.deepEqual(await byTeam("b"), [], "another filter's page is another page");
  const renamed = (await vaults.list()).data[0];
  await vaults.update(renamed.id, { metadata: { team: "b" } });
  assert.deepEqual(await byTeam("a"), []);
  assert.deepEqual(await byTeam("b"), ["va"]);

  // Credentials of one vault are not those of another (the parent is part of the key).
  const other = await vaults.create({ name: "other" });
  const creds = server.client.beta.agents.vaults.credentials;
  assert.deepEqual((await creds.list(other.id)).data, []);
  assert.deepEqual((await creds.list(renamed.id)).data, []);
  await creds.create(renamed.id, {
    name: "k",
    auth: {
      type: "environment_variable",
      secret_name: "API_KEY",
      secret_value: "s3cret",
      networking: { type: "limited", allowed_hosts: ["api.example.com"] },
    },
  });
  assert.equal((await creds.list(renamed.id)).data.length, 1);
  assert.deepEqual((await creds.list(other.id)).data, []);
});

Deno.test("list cache: a page read inside a transaction that rolls back is not kept", () => {
  const dir = Deno.makeTempDirSync({ prefix: "sandbar-test-data-" });
  const store = AgentStore.open(dir);
  try {
    const page = pageRequest(parseQuery("", ["after", "limit", "order"]));
    const ids = () =>
      JSON.parse(listPageText(store, "agent", "", page)).data.map((a: { id: string }) => a.id);
    store.insert("agent", "agent_kept", "", 1, { id: "agent_kept" }, null, "default");
    assert.deepEqual(ids(), ["agent_kept"]);
    assert.throws(() =>
      store.transaction(() => {
        store.insert("agent", "agent_undone", "", 1, { id: "agent_undone" }, null, "default");
        assert.deepEqual(ids(), ["agent_undone", "agent_kept"], "seen inside the transaction");
        throw new Error("abort");
      }), /abort/);
    assert.deepEqual(ids(), ["agent_kept"], "not answered from a page the rollback undid");
  } finally {
    store.close();
    Deno.removeSync(dir, { recursive: true });
  }
});
