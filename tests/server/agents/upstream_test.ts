import assert from "node:assert/strict";
import OpenAI from "openai";
import { rejection, startAgentsServer } from "./helpers.ts";
import { startScriptedUpstream } from "./scripted_upstream.ts";

async function setup() {
  const upstream = startScriptedUpstream();
  const server = await startAgentsServer({
    env: { OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: upstream.apiKey },
  });
  return {
    upstream,
    server,
    client: server.client,
    async [Symbol.asyncDispose]() {
      await server.close();
      await upstream.close();
    },
  };
}

Deno.test("models: the upstream's list, cached; retrieve; unknown model is 404", async () => {
  await using t = await setup();
  const { client, upstream } = t;
  const list = [];
  for await (const m of client.models.list()) list.push(m);
  assert.deepEqual(list.map((m) => m.id), ["gpt-test", "gpt-other"]);
  assert.deepEqual(await client.models.retrieve("gpt-other"), {
    id: "gpt-other",
    object: "model",
    created: 1700000001,
    owned_by: "scripted",
  });
  const missing = await rejection(() => client.models.retrieve("gpt-nope"));
  assert.ok(missing instanceof OpenAI.NotFoundError);
  assert.equal(missing.param, "model");
  assert.equal(upstream.requests.filter((r) => r.path === "/v1/models").length, 1, "cached");
});

Deno.test("responses: create, retrieve, input items, cancel, delete, input tokens through the upstream", async () => {
  await using t = await setup();
  const { client, upstream, server } = t;
  const created = await client.responses.create({
    model: "gpt-test",
    input: [{ role: "user", content: "Say hello" }, { role: "user", content: "Politely" }],
  });
  assert.equal(created.output_text, "Hello");
  // The upstream got the server's upstream key, never the sandbox token.
  const sent = upstream.requests.find((r) => r.path === "/v1/responses")!;
  assert.equal(sent.authorization, `Bearer ${upstream.apiKey}`);
  assert.ok(!sent.body.includes(server.token));

  const retrieved = await client.responses.retrieve(created.id);
  assert.equal(retrieved.id, created.id);
  assert.equal(retrieved.output_text, "Hello");

  const items = [];
  for await (
    const item of client.responses.inputItems.list(created.id, { limit: 1, order: "asc" })
  ) {
    items.push(item);
  }
  assert.equal(items.length, 2);
  assert.deepEqual(
    items.map((i) => (i as { content: { text: string }[] }).content[0].text),
    ["Say hello", "Politely"],
  );
  const desc = await client.responses.inputItems.list(created.id);
  assert.equal((desc.data[0] as { content: { text: string }[] }).content[0].text, "Politely");

  const background = await client.responses.create({
    model: "gpt-test",
    input: "x",
    background: true,
  });
  assert.equal(background.status, "in_progress");
  const cancelled = await client.responses.cancel(background.id);
  assert.equal(cancelled.status, "cancelled");
  assert.equal((await client.responses.retrieve(background.id)).status, "cancelled");

  const count = await client.responses.inputTokens.count({
    model: "gpt-test",
    input: "count these",
  });
  assert.equal(typeof count.input_tokens, "number");
  assert.ok(count.input_tokens > 0);

  await client.responses.delete(created.id);
  const gone = await rejection(() => client.responses.retrieve(created.id));
  assert.ok(gone instanceof OpenAI.NotFoundError);
  assert.equal(gone.param, "response_id");
  assert.ok(
    upstream.requests.some((r) =>
      r.method === "DELETE" && r.path === `/v1/responses/${created.id}`
    ),
  );

  const notStored = await client.responses.create({ model: "gpt-test", input: "x", store: false });
  assert.ok(
    await rejection(() => client.responses.retrieve(notStored.id)) instanceof OpenAI.NotFoundError,
  );

  const unknown = await rejection(() =>
    client.responses.create({ model: "gpt-test", imput: "x" } as never)
  );
  assert.equal(unknown.param, "imput");
});

Deno.test("responses: a stream is relayed event by event as the upstream sends it, then stored", async () => {
  await using t = await setup();
  const { client, upstream } = t;
  const release = Promise.withResolvers<void>();
  upstream.holdStream = release.promise;
  const stream = await client.responses.create({ model: "gpt-test", input: "hi", stream: true });
  const seen: string[] = [];
  let id = "";
  for await (const event of stream) {
    seen.push(event.type);
    if (event.type === "response.created") id = event.response.id;
    // The upstream holds the rest until the first delta has reached the client.
    if (event.type === "response.output_text.delta" && event.delta === "Hel") release.resolve();
  }
  assert.deepEqual(seen, [
    "response.created",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.completed",
  ]);
  const stored = await client.responses.retrieve(id);
  assert.equal(stored.status, "completed");
  assert.equal(stored.output_text, "Hello");
});

Deno.test("responses: upstream errors keep their status in the envelope; unreachable is 502", async () => {
  await using t = await setup();
  const { client } = t;
  const missing = await rejection(() =>
    client.responses.create({ model: "bad-model", input: "x" })
  );
  assert.ok(missing instanceof OpenAI.NotFoundError);
  assert.equal(missing.param, "model");
  assert.equal((missing.error as { code: string }).code, "model_not_found");
  assert.equal((missing.headers as Headers).get("x-should-retry"), "false");

  // An upstream nobody listens on.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await using server = await startAgentsServer({
    env: {
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      OPENAI_API_KEY: "sk-never-shown-9a8b7c",
    },
  });
  const down = await rejection(() =>
    server.client.responses.create({ model: "gpt-test", input: "x" })
  );
  assert.equal(down.status, 502);
  assert.equal((down.error as { code: string }).code, "upstream_unreachable");
  assert.match(String((down.error as { message: string }).message), /could not be reached/);
  assert.ok(!JSON.stringify(down.error).includes("sk-never-shown-9a8b7c"));
});

Deno.test("upstream key: never in a process the server starts, and refused as a caller's env", async () => {
  await using t = await setup();
  const { server, upstream } = t;
  const res = await server.fetch("/process/shell", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ cmd: "env" }),
  });
  assert.equal(res.status, 200);
  const out = await res.text();
  assert.ok(out.includes("PATH="), "the command ran");
  assert.ok(!out.includes(upstream.apiKey), "the upstream key is not in a child's environment");
  assert.ok(!out.includes("OPENAI_API_KEY"));
  const set = await server.fetch("/process/shell", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ cmd: "true", env: { OPENAI_API_KEY: "x" } }),
  });
  assert.equal(set.status, 403);
});
