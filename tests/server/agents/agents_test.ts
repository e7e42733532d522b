import assert from "node:assert/strict";
import OpenAI from "openai";
import { rejection, startAgentsServer } from "./helpers.ts";

Deno.test("agents: create, retrieve, update, list across pages in both orders, delete", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const created = await client.beta.agents.create({
    model: "gpt-test",
    name: "reviewer",
    instructions: "Review the diff.",
    metadata: { team: "a" },
    tools: [{
      type: "function",
      name: "lookup",
      description: "Look a thing up",
      parameters: { type: "object", properties: {} },
    }],
  });
  assert.match(created.id, /^agent_[0-9a-f]+$/);
  assert.equal(created.object, "agent");
  assert.equal(created.model, "gpt-test");
  assert.equal(typeof created.created_at, "number");
  assert.ok(Math.abs(created.created_at - Date.now() / 1000) < 60, "Unix seconds");
  assert.deepEqual(created.metadata, { team: "a" });
  assert.equal(created.tools.length, 1);

  assert.deepEqual(await client.beta.agents.retrieve(created.id), created);

  // Omitted fields unchanged; metadata and tools replaced whole.
  const updated = await client.beta.agents.update(created.id, {
    metadata: { env: "x" },
    tools: [],
  });
  assert.equal(updated.name, "reviewer");
  assert.equal(updated.instructions, "Review the diff.");
  assert.deepEqual(updated.metadata, { env: "x" });
  assert.deepEqual(updated.tools, []);
  assert.deepEqual(await client.beta.agents.retrieve(created.id), updated);

  const ids = [created.id];
  for (let i = 0; i < 6; i++) ids.push((await client.beta.agents.create({ model: `m${i}` })).id);

  const desc: string[] = [];
  for await (const a of client.beta.agents.list({ limit: 2 })) desc.push(a.id);
  assert.deepEqual(desc, [...ids].reverse(), "4 pages of 2, newest first");
  const asc: string[] = [];
  for await (const a of client.beta.agents.list({ limit: 3, order: "asc" })) asc.push(a.id);
  assert.deepEqual(asc, ids, "3 pages, oldest first");

  const page = await client.beta.agents.list({ limit: 2, order: "asc" });
  const raw = await (await server.fetch("/v1/agents?limit=2&order=asc")).json();
  assert.deepEqual(Object.keys(raw).sort(), ["data", "first_id", "has_more", "last_id", "object"]);
  assert.equal(raw.object, "list");
  assert.equal(raw.first_id, ids[0]);
  assert.equal(raw.last_id, ids[1]);
  assert.equal(raw.has_more, true);
  assert.deepEqual(page.data.map((a) => a.id), ids.slice(0, 2));

  const deleted = await client.beta.agents.delete(ids[3]);
  assert.deepEqual(deleted, { id: ids[3], deleted: true, object: "agent.deleted" });
  const after = await rejection(() => client.beta.agents.retrieve(ids[3]));
  assert.ok(after instanceof OpenAI.NotFoundError);
});

Deno.test("agents: 404s, validation errors naming the field, bad cursors", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const missing = await rejection(() => client.beta.agents.retrieve("agent_nope"));
  assert.ok(missing instanceof OpenAI.NotFoundError);
  assert.equal(missing.param, "agent_id");
  assert.equal((missing.error as { type: string }).type, "not_found_error");
  assert.ok(
    await rejection(() => client.beta.agents.update("agent_nope", { name: "x" })) instanceof
      OpenAI.NotFoundError,
  );
  assert.ok(
    await rejection(() => client.beta.agents.delete("agent_nope")) instanceof
      OpenAI.NotFoundError,
  );

  const unknownField = await rejection(() =>
    client.beta.agents.create({ model: "m", modle: 1 } as never)
  );
  assert.ok(unknownField instanceof OpenAI.BadRequestError);
  assert.equal(unknownField.param, "modle");
  assert.match(String((unknownField.error as { message: string }).message), /Unknown parameter/);

  const noModel = await rejection(() => client.beta.agents.create({} as never));
  assert.equal(noModel.param, "model");
  assert.equal(noModel.status, 400);

  const badTool = await rejection(() =>
    client.beta.agents.create({
      model: "m",
      tools: [
        {
          type: "mcp",
          server_label: "s",
          transport: { type: "http", server_url: "https://x", authorization: "secret" },
        } as never,
      ],
    })
  );
  assert.equal(badTool.param, "tools[0].transport.authorization");

  // A tool no session can run is refused when the agent is made, not at its first session.
  const webSearch = await rejection(() =>
    client.beta.agents.create({ model: "m", tools: [{ type: "web_search" }] as never })
  );
  assert.ok(webSearch instanceof OpenAI.BadRequestError);
  assert.equal(webSearch.param, "tools[0].type");
  assert.match(
    String(webSearch.message),
    /'web_search' are not supported .*use 'function' or 'mcp'/,
  );
  const plain = await client.beta.agents.create({ model: "m" });
  const laterSearch = await rejection(() =>
    client.beta.agents.update(plain.id, { tools: [{ type: "web_search" }] as never })
  );
  assert.equal(laterSearch.param, "tools[0].type");
  assert.deepEqual((await client.beta.agents.retrieve(plain.id)).tools, []);

  const badLimit = await rejection(() => client.beta.agents.list({ limit: 101 }));
  assert.equal(badLimit.param, "limit");
  const badOrder = await rejection(() => client.beta.agents.list({ order: "sideways" as never }));
  assert.equal(badOrder.param, "order");
  const badAfter = await rejection(() => client.beta.agents.list({ after: "agent_unknown" }));
  assert.ok(badAfter instanceof OpenAI.BadRequestError);
  assert.equal(badAfter.param, "after");
  // A cursor from another list (a vault id) is foreign to the agents list.
  const vault = await client.beta.agents.vaults.create({ name: "v" });
  const foreign = await rejection(() => client.beta.agents.list({ after: vault.id }));
  assert.equal(foreign.param, "after");
  const unknownQuery = await server.fetch("/v1/agents?colour=red");
  assert.equal(unknownQuery.status, 400);
  assert.equal(unknownQuery.headers.get("x-should-retry"), "false", "a retry cannot help");
  assert.equal((await unknownQuery.json()).error.param, "colour");
});

Deno.test("agents: Idempotency-Key replays the first answer, refuses another body with 409", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const headers = { "Idempotency-Key": "create-1" };
  const first = await client.beta.agents.create({ model: "m", name: "once" }, { headers });
  const again = await client.beta.agents.create({ model: "m", name: "once" }, { headers });
  assert.deepEqual(again, first);
  const all = await client.beta.agents.list();
  assert.equal(all.data.length, 1, "the retry created nothing");

  const res = await server.fetch("/v1/agents", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": "create-1" },
    body: JSON.stringify({ model: "m", name: "other" }),
  });
  assert.equal(res.status, 409);
  assert.equal(res.headers.get("x-should-retry"), "false");
  const body = await res.json();
  assert.equal(body.error.type, "conflict_error");
  assert.equal(body.error.param, "Idempotency-Key");
  // Retries sent at once, before the first has answered, still make one agent.
  const together = await Promise.all(
    Array.from({ length: 8 }, () =>
      client.beta.agents.create({ model: "m", name: "racing" }, {
        headers: { "Idempotency-Key": "create-2" },
      })),
  );
  assert.equal(new Set(together.map((a) => a.id)).size, 1);
  assert.equal((await client.beta.agents.list()).data.length, 2);
  // The client does not retry it (x-should-retry: false) even with retries on.
  const retrying = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 2 });
  const conflict = await rejection(() =>
    retrying.beta.agents.create({ model: "m", name: "other" }, { headers })
  );
  assert.ok(conflict instanceof OpenAI.ConflictError);
});

Deno.test("agents: scopes agents:read for GET and agents:write for the rest", async () => {
  await using server = await startAgentsServer({
    policy: {
      endpoints: { agents: true },
      identities: [{ id: "reader", token: "reader-token-0123456789", scopes: ["agents:read"] }],
    },
  });
  const reader = new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: "reader-token-0123456789",
    maxRetries: 0,
  });
  assert.deepEqual((await reader.beta.agents.list()).data, []);
  const refused = await rejection(() => reader.beta.agents.create({ model: "m" }));
  assert.ok(refused instanceof OpenAI.PermissionDeniedError);
  assert.equal((refused.error as { code: string }).code, "missing_scope");
});

Deno.test("chat.completions through the same client says plainly it is not served, and what to use", async () => {
  await using server = await startAgentsServer();
  const e = await rejection(() =>
    server.client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
    })
  );
  assert.ok(e instanceof OpenAI.NotFoundError);
  assert.match(
    String(e.message),
    /Not found: \/v1\/chat\/completions\. Chat Completions is not served by the sandbox: use the Responses API \(client\.responses\.create/,
  );
});
