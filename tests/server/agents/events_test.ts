import assert from "node:assert/strict";
import { readEvents, runtimeSetup } from "./runtime_helpers.ts";

const isIdle = (e: Record<string, unknown>) => e.type === "agent.session.idle";

Deno.test("events: create with stream: true streams the first turn and ends after its idle", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  upstream.script.push({ reasoning: "Think.", output: [{ type: "message", text: "Hi there." }] });
  const stream = await client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "gpt-test" },
    input: "Hi",
    stream: true,
  });
  const types: string[] = [];
  for await (const event of stream) types.push(event.type);
  assert.deepEqual(types, [
    "agent.session.created",
    "agent.session.turn.created",
    "agent.session.in_progress",
    "agent.session.turn.in_progress",
    "agent.session.turn.item.added",
    "agent.session.turn.item.added",
    "agent.session.turn.reasoning_summary_part.added",
    "agent.session.turn.reasoning_summary_text.delta",
    "agent.session.turn.reasoning_summary_text.done",
    "agent.session.turn.reasoning_summary_part.done",
    "agent.session.turn.item.done",
    "agent.session.turn.item.added",
    "agent.session.turn.content_part.added",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.done",
    "agent.session.turn.content_part.done",
    "agent.session.turn.item.done",
    "agent.session.turn.completed",
    "agent.session.idle",
  ]);
  // finalResult on a create stream, with no environment: no built-in tools offered.
  upstream.script.push({ output: [{ type: "message", text: "Again." }] });
  const again = await client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "gpt-test" },
    input: "Hi",
    stream: true,
  });
  const result = await again.finalResult();
  assert.equal(result.turn.status, "completed");
  assert.deepEqual((await upstream.modelCall(2)).tools, []);
});

Deno.test("events: two subscribers see the same events in the same order; a reconnect with Last-Event-ID gets what it missed", async () => {
  await using t = await runtimeSetup();
  const { client, upstream, server } = t;
  const { sessionId } = await t.session();
  upstream.script.push(
    { output: [{ type: "function_call", name: "shell", arguments: { command: "echo one" } }] },
    { output: [{ type: "message", text: "Done." }] },
  );
  const path = `/v1/agents/sessions/${sessionId}/events`;
  const first = await server.fetch(path, { headers: { accept: "text/event-stream" } });
  const second = await server.fetch(path, { headers: { accept: "text/event-stream" } });
  assert.equal(first.headers.get("content-type"), "text/event-stream");
  const readingSecond = readEvents(second, isIdle);
  // The first reader stops half-way through the turn.
  const readingFirst = readEvents(first, (e) => e.type === "agent.session.turn.item.added");
  await client.beta.agents.sessions.events.create(sessionId, {
    events: [{
      type: "agent.session.input.message",
      input: [{ role: "user", content: [{ type: "input_text", text: "Go" }] }],
    }],
  });
  const all = await readingSecond;
  const partial = await readingFirst;
  assert.deepEqual(partial.map((e) => e.id), all.slice(0, partial.length).map((e) => e.id));
  assert.equal(new Set(all.map((e) => e.id)).size, all.length, "ids are unique");
  assert.ok(all.every((e) => e.event.event_id === e.id && e.event.session_id === sessionId));
  const resumed = await server.fetch(path, {
    headers: { accept: "text/event-stream", "last-event-id": partial.at(-1)!.id },
  });
  const rest = await readEvents(resumed, isIdle);
  assert.deepEqual(rest.map((e) => e.id), all.slice(partial.length).map((e) => e.id));
  assert.ok(all.some((e) => e.event.type === "agent.output.command_execution_output.delta"));
  // Last-Event-ID 0 replays the whole session from its first event, after the turn ended too.
  const replay = await server.fetch(path, {
    headers: { accept: "text/event-stream", "last-event-id": "0" },
  });
  const replayed = await readEvents(replay, (e) => e.event_id === all.at(-1)!.id);
  assert.deepEqual(replayed.slice(-all.length).map((e) => e.id), all.map((e) => e.id));
  // An id that is not an event of this session is refused by name.
  const bad = await server.fetch(path, { headers: { "last-event-id": "evt_nope" } });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "Last-Event-ID");
});

Deno.test("events: items, turns and a turn's items page with the client's auto-pagination", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId } = await t.session();
  for (const n of [1, 2, 3]) {
    upstream.script.push(
      { output: [{ type: "function_call", name: "shell", arguments: { command: `echo ${n}` } }] },
      { output: [{ type: "message", text: `Answer ${n}.` }] },
    );
    await client.beta.agents.sessions.stream(sessionId, { input: `Q${n}` }).finalResult();
  }
  const turns = [];
  for await (
    const turn of client.beta.agents.sessions.turns.list(sessionId, { limit: 1, order: "asc" })
  ) turns.push(turn);
  assert.equal(turns.length, 3);
  assert.ok(turns.every((x) => x.status === "completed" && x.subagent_id === null));
  const items = [];
  for await (
    const item of client.beta.agents.sessions.items.list(sessionId, { limit: 2, order: "asc" })
  ) items.push(item);
  assert.deepEqual(
    items.map((i) => i.type),
    Array(3).fill(["message", "command_execution", "message"]).flat(),
  );
  const turnItems = [];
  for await (
    const item of client.beta.agents.sessions.turns.items.list(turns[1].id, {
      session_id: sessionId,
      limit: 1,
      order: "asc",
    })
  ) turnItems.push(item);
  assert.deepEqual(turnItems.map((i) => i.turn_id), Array(3).fill(turns[1].id));
  const retrieved = await client.beta.agents.sessions.turns.retrieve(turns[2].id, {
    session_id: sessionId,
  });
  assert.equal(retrieved.usage?.total_tokens, 30);
  // One trace per root turn, OTLP JSON with the turn, model and tool spans.
  const traces = [];
  for await (const trace of client.beta.agents.sessions.traces.list(sessionId, { order: "asc" })) {
    traces.push(trace);
  }
  assert.deepEqual(traces.map((x) => x.id), turns.map((x) => x.id));
  const spans = (traces[0].otlp as {
    resourceSpans: { scopeSpans: { spans: { name: string; attributes: { key: string }[] }[] }[] }[];
  }).resourceSpans[0].scopeSpans[0].spans;
  assert.deepEqual(spans.map((s) => s.name), [
    "turn",
    "model gpt-test",
    "tool shell",
    "model gpt-test",
  ]);
  assert.ok(spans[2].attributes.some((a) => a.key === "process.exit.code"));
  assert.ok(spans[1].attributes.some((a) => a.key === "gen_ai.usage.input_tokens"));
});
