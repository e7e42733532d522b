import assert from "node:assert/strict";
import { AgentTurnResultError } from "openai/lib/beta/agents/agent-turn-result-error";
import { PATCH_NOTES_STEP, runtimeSetup } from "./runtime_helpers.ts";
import { startAgentsServer } from "./helpers.ts";

Deno.test("restart: SIGKILL mid-turn; after a restart that turn is failed (server_error), the session idle, and the next turn has the whole history", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  const root = await Deno.makeTempDir({ prefix: "sandbar-test-root-" });
  try {
    // --no-narrow: the process the test starts is the one serving, so SIGKILL hits it.
    const t = await runtimeSetup({ dataDir, root, args: ["--no-narrow"] });
    const { client, upstream } = t;
    const { sessionId } = await t.session();
    const gate = Promise.withResolvers<void>();
    upstream.script.push(
      { output: [{ type: "function_call", name: "shell", arguments: { command: "echo kept" } }] },
      { output: [{ type: "message", text: "never sent" }], gate: gate.promise },
    );
    const first = client.beta.agents.sessions.stream(sessionId, { input: "First question" })
      .finalResult().catch((e) => e);
    await upstream.modelCall(2);
    Deno.kill(t.server.pid, "SIGKILL");
    await t.server.close();
    gate.resolve();
    assert.ok(await first instanceof Error);

    await using second = await startAgentsServer({
      dataDir,
      root,
      env: { OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: upstream.apiKey },
    });
    const c2 = second.client;
    const turns = [];
    for await (const turn of c2.beta.agents.sessions.turns.list(sessionId)) turns.push(turn);
    assert.equal(turns.length, 1);
    assert.equal(turns[0].status, "failed");
    assert.equal(turns[0].error?.code, "server_error");
    assert.match(turns[0].error!.message, /server restarted/);
    const session = await c2.beta.agents.sessions.retrieve(sessionId);
    assert.equal(session.status, "idle");
    const items = [];
    for await (const i of c2.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
      items.push(i);
    }
    assert.deepEqual(items.map((i) => [i.type, "status" in i ? i.status : null]), [
      ["message", "completed"],
      ["command_execution", "completed"],
    ]);

    upstream.script.push({ output: [{ type: "message", text: "Second answer." }] });
    const next = await c2.beta.agents.sessions.stream(sessionId, { input: "Second question" })
      .finalResult();
    assert.equal(next.turn.status, "completed");
    const input = (await upstream.modelCall(3)).input as Record<string, unknown>[];
    assert.deepEqual(input.map((i) => i.type), [
      "message",
      "function_call",
      "function_call_output",
      "message",
    ]);
    assert.match(String(input[2].output), /kept/);
    await upstream.close();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("upstream: the same turn through a Chat Completions upstream, tool calls mapped both ways", async () => {
  await using t = await runtimeSetup({ upstreamApi: "chat_completions" });
  const { client, upstream } = t;
  const { sessionId, workspace } = await t.session();
  upstream.script.push(
    {
      output: [
        { type: "message", text: "Looking." },
        { type: "function_call", name: "shell", arguments: { command: ["echo", "hello"] } },
      ],
    },
    PATCH_NOTES_STEP,
    { output: [{ type: "message", text: "Done." }] },
  );
  const result = await client.beta.agents.sessions.stream(sessionId, { input: "Edit." })
    .finalResult();
  assert.equal(result.turn.status, "completed");
  assert.equal(result.turn.usage?.total_tokens, 45);
  assert.deepEqual(
    result.messages.map((m) => m.content[0].type === "output_text" && m.content[0].text),
    [
      "Done.",
    ],
  );
  assert.equal(await Deno.readTextFile(`${workspace}/notes.txt`), "hello world\n");
  const last = await upstream.modelCall(3);
  const messages = last.messages as {
    role: string;
    content: string | null;
    tool_calls?: { function: { name: string } }[];
  }[];
  assert.deepEqual(messages.map((m) => m.role), [
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "tool",
  ]);
  assert.equal(messages[2].content, "Looking.");
  assert.equal(messages[2].tool_calls?.[0].function.name, "shell");
  assert.match(messages[3].content!, /hello/);
  assert.deepEqual((last.tools as { function: { name: string } }[]).map((x) => x.function.name), [
    "shell",
    "apply_patch",
  ]);
  assert.ok(upstream.requests.every((r) => r.path !== "/v1/responses"));
});

Deno.test("upstream: a session's vault OPENAI_API_KEY wins over the server's key", async () => {
  await using t = await runtimeSetup({ env: { OPENAI_API_KEY: "sk-not-the-upstreams" } });
  const { client, upstream } = t;
  const vault = await client.beta.agents.vaults.create({ name: "keys" });
  await client.beta.agents.vaults.credentials.create(vault.id, {
    name: "openai",
    auth: {
      type: "environment_variable",
      secret_name: "OPENAI_API_KEY",
      secret_value: upstream.apiKey,
      networking: { type: "unrestricted" },
    },
  });
  upstream.script.push({ output: [{ type: "message", text: "Keyed." }] });
  const withVault = await client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "gpt-test" },
    vault_ids: [vault.id],
    input: "Hi",
    stream: true,
  });
  assert.equal((await withVault.finalResult()).turn.status, "completed");
  const without = await client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "gpt-test" },
    input: "Hi",
    stream: true,
  });
  const failed = await without.finalResult().catch((e) => e);
  assert.ok(failed instanceof AgentTurnResultError);
  assert.equal(failed.turn?.error?.code, "authentication_error");
});

Deno.test("traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, each root turn's trace is posted as OTLP/HTTP JSON", async () => {
  const received = Promise.withResolvers<{ path: string; type: string | null; body: string }>();
  const collector = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      received.resolve({
        path: new URL(req.url).pathname,
        type: req.headers.get("content-type"),
        body: await req.text(),
      });
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  );
  try {
    await using t = await runtimeSetup({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.addr.port}` },
    });
    t.upstream.script.push({ output: [{ type: "message", text: "Traced." }] });
    const stream = await t.client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "gpt-test" },
      input: "Hi",
      stream: true,
    });
    const result = await stream.finalResult();
    const got = await received.promise;
    assert.equal(got.path, "/v1/traces");
    assert.equal(got.type, "application/json");
    const otlp = JSON.parse(got.body);
    const spans = otlp.resourceSpans[0].scopeSpans[0].spans;
    assert.equal(spans[0].name, "turn");
    assert.ok(
      spans[0].attributes.some((a: { key: string; value: { stringValue?: string } }) =>
        a.key === "agents.turn.id" && a.value.stringValue === result.turn.id
      ),
    );
  } finally {
    await collector.shutdown();
  }
});
