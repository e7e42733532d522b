/**
 * Subagents end to end: the official client, the real server (a child process) and the
 * scripted upstream, which tells the parent's and each subagent's model calls apart by their
 * instructions and input. A parent spawns two subagents that each run a shell command in the
 * sandbox, waits for both, and answers with both results; the subagent endpoints page their
 * items and turns; the client's stream helper ends on the root turn; a cancel mid-way leaves no
 * process.
 */

import assert from "node:assert/strict";
import { running } from "./fixtures/mcp/harness.ts";
import { readEvents, runtimeSetup } from "./runtime_helpers.ts";
import type { ScriptedOutput } from "./scripted_upstream.ts";

type Req = Record<string, unknown>;
type Input = { type: string; output?: string; content?: { text?: string }[] }[];

const isSubagent = (r: Req) => (r.instructions as string).includes("You are a subagent");
const mentions = (r: Req, text: string) => JSON.stringify(r.input).includes(text);
const outputsOf = (r: Req) =>
  (r.input as Input).filter((i) => i.type === "function_call_output").map((i) => i.output!);

/** A subagent's two model calls: run `command`, then answer with what it printed. */
function subagentSteps(task: string, command: string) {
  return [
    {
      match: (r: Req) => isSubagent(r) && mentions(r, task) && outputsOf(r).length === 0,
      output: [{
        type: "function_call",
        name: "shell",
        arguments: { command },
      }] as ScriptedOutput[],
    },
    {
      match: (r: Req) => isSubagent(r) && mentions(r, task) && outputsOf(r).length === 1,
      output: (r: Req): ScriptedOutput[] => {
        const printed = /Output:\n(.*)/.exec(outputsOf(r)[0])![1];
        return [{ type: "message", text: `${task} printed ${printed}` }];
      },
    },
  ];
}

Deno.test("subagents: a parent spawns two that each run a command, waits for both, and answers with both results", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId } = await t.session({ multi_agent: { enabled: true } });
  const root = (r: Req) => !isSubagent(r);
  upstream.script.push(
    {
      match: (r) => root(r) && outputsOf(r).length === 0,
      output: [
        { type: "function_call", name: "spawn_agent", arguments: { message: "Task A" } },
        { type: "function_call", name: "spawn_agent", arguments: { message: "Task B" } },
      ],
    },
    ...subagentSteps("Task A", "echo alpha-$((40 + 2))"),
    ...subagentSteps("Task B", "echo beta-$((3 + 4))"),
    {
      match: (r) => root(r) && outputsOf(r).length === 2,
      output: (r) => {
        const ids = outputsOf(r).map((o) => JSON.parse(o).agent_id);
        return [{ type: "function_call", name: "wait", arguments: { ids, all: true } }];
      },
    },
    {
      match: (r) => root(r) && outputsOf(r).length === 3,
      output: (r) => {
        const waited = JSON.parse(outputsOf(r)[2]);
        const answers = Object.values(waited.status as Record<string, { completed: string }>)
          .map((s) => s.completed);
        return [{ type: "message", text: `Both done: ${answers.join("; ")}` }];
      },
    },
  );

  const stream = client.beta.agents.sessions.stream(sessionId, { input: "Split the work." })
    .withResultCollection();
  const seen: Record<string, unknown>[] = [];
  for await (const event of stream) seen.push(event as unknown as Record<string, unknown>);
  const result = await stream.finalResult();
  assert.equal(result.turn.status, "completed");
  assert.equal(result.turn.subagent_id, null);
  assert.equal(result.output_text, "Both done: Task A printed alpha-42; Task B printed beta-7");
  assert.equal(upstream.script.length, 0, "every scripted call was made");

  // The stream ended on the root turn's terminal event and idle, after both subagents' turns.
  const types = seen.map((e) => e.type);
  assert.deepEqual(types.slice(-2), ["agent.session.turn.completed", "agent.session.idle"]);
  assert.equal((seen.at(-2)!.turn as { id: string }).id, result.turn.id);
  const created = seen.filter((e) => e.type === "agent.session.subagent.created");
  assert.equal(created.length, 2);
  const subTurnsDone = seen.filter((e) =>
    e.type === "agent.session.turn.completed" &&
    (e.turn as { subagent_id: string | null }).subagent_id !== null
  );
  assert.equal(subTurnsDone.length, 2);

  // The subagents, through the client's auto-pagination (one per page).
  const subagents = [];
  for await (
    const s of client.beta.agents.sessions.subagents.list(sessionId, { limit: 1, order: "asc" })
  ) {
    subagents.push(s);
  }
  assert.deepEqual(subagents.map((s) => [s.status, s.parent_agent_id, s.instructions]), [
    ["active", sessionId, [{ type: "output_text", text: "Task A" }]],
    ["active", sessionId, [{ type: "output_text", text: "Task B" }]],
  ]);
  const [a] = subagents;
  assert.deepEqual(
    await client.beta.agents.sessions.subagents.retrieve(a.id, { session_id: sessionId }),
    a,
  );
  const subItems = [];
  for await (
    const i of client.beta.agents.sessions.subagents.items.list(a.id, {
      session_id: sessionId,
      limit: 1,
      order: "asc",
    })
  ) subItems.push(i as unknown as Record<string, unknown>);
  assert.deepEqual(subItems.map((i) => i.type), ["agent_message", "command_execution", "message"]);
  assert.deepEqual(
    [subItems[0].sender_agent_id, subItems[0].recipient_agent_id],
    [sessionId, a.id],
  );
  assert.equal(subItems[1].output, "alpha-42\n");
  assert.equal(subItems[1].exit_code, 0);
  const subTurns = [];
  for await (
    const x of client.beta.agents.sessions.subagents.turns.list(a.id, {
      session_id: sessionId,
      limit: 1,
    })
  ) subTurns.push(x);
  assert.equal(subTurns.length, 1);
  assert.equal(subTurns[0].subagent_id, a.id);
  assert.equal(subTurns[0].status, "completed");
  const turn = await client.beta.agents.sessions.subagents.turns.retrieve(subTurns[0].id, {
    session_id: sessionId,
    subagent_id: a.id,
  });
  assert.deepEqual(turn, subTurns[0]);
  const turnItems = [];
  for await (
    const i of client.beta.agents.sessions.subagents.turns.items.list(turn.id, {
      session_id: sessionId,
      subagent_id: a.id,
      limit: 2,
      order: "asc",
    })
  ) turnItems.push(i.id);
  assert.deepEqual(turnItems, subItems.map((i) => i.id));

  // The root agent's items: its delegation calls and the answers handed to it, not the
  // subagents' own work.
  const rootItems = [];
  for await (const i of client.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
    rootItems.push(i as unknown as Record<string, unknown>);
  }
  assert.deepEqual(rootItems.map((i) => i.type), [
    "message",
    "create_subagent_call",
    "create_subagent_call",
    "wait_for_subagents_call",
    "agent_message",
    "agent_message",
    "message",
  ]);
  assert.deepEqual(rootItems[1].content, [{ type: "output_text", text: "Task A" }]);
  assert.equal(rootItems[1].status, "completed");
  assert.deepEqual(
    new Set(rootItems[3].recipient_agent_ids as string[]),
    new Set(subagents.map((s) => s.id)),
  );
  const handed = rootItems.slice(4, 6).map((i) => (i.content as { text: string }[])[0].text);
  assert.deepEqual(handed.sort(), ["Task A printed alpha-42", "Task B printed beta-7"]);
  // Root turns keep subagent_id null; the session's turn list is the root agent's.
  const turns = await client.beta.agents.sessions.turns.list(sessionId);
  assert.deepEqual(turns.data.map((x) => [x.id, x.subagent_id]), [[result.turn.id, null]]);
  // Not found: a subagent of another session, a turn of another subagent.
  const other = await t.session();
  const missing = await t.server.fetch(`/v1/agents/sessions/${other.sessionId}/subagents/${a.id}`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.param, "subagent_id");
  const wrongTurn = await t.server.fetch(
    `/v1/agents/sessions/${sessionId}/subagents/${subagents[1].id}/turns/${turn.id}`,
  );
  assert.equal(wrongTurn.status, 404);

  // Deleting the session deletes its subagents.
  await client.beta.agents.sessions.delete(sessionId);
  const gone = await t.server.fetch(`/v1/agents/sessions/${sessionId}/subagents`);
  assert.equal(gone.status, 404);
});

Deno.test("subagents: cancel of the root turn cancels the subagent's turn and kills its command", async () => {
  await using t = await runtimeSetup();
  const { upstream } = t;
  const { sessionId } = await t.session({
    multi_agent: { enabled: true, max_concurrent_subagents: 1 },
  });
  upstream.script.push(
    {
      match: (r) => !isSubagent(r) && outputsOf(r).length === 0,
      output: [{ type: "function_call", name: "spawn_agent", arguments: { message: "Sleep" } }],
    },
    {
      match: (r) => !isSubagent(r) && outputsOf(r).length === 1,
      output: (r) => [{
        type: "function_call",
        name: "wait",
        arguments: { ids: [JSON.parse(outputsOf(r)[0]).agent_id], timeout_ms: 600_000 },
      }],
    },
    {
      match: isSubagent,
      output: [{
        type: "function_call",
        name: "shell",
        arguments: { command: "echo started $$; exec sleep 300" },
      }],
    },
  );
  const events = await t.server.fetch(`/v1/agents/sessions/${sessionId}/events`);
  const post = (event: Record<string, unknown>) =>
    t.server.post(`/v1/agents/sessions/${sessionId}/events`, { events: [event] });
  await post({
    type: "agent.session.input.message",
    input: [{ role: "user", content: [{ type: "input_text", text: "Go." }] }],
  });
  let pid = 0;
  let rootTurn = "";
  let ended = false;
  const seen = await readEvents(events, (e) => {
    if (e.type === "agent.session.turn.created" && !rootTurn) {
      rootTurn = (e.turn as { id: string }).id;
    }
    const started = e.type === "agent.output.command_execution_output.delta" &&
      /started (\d+)/.exec(e.delta as string);
    if (started && !pid) {
      pid = Number(started[1]);
      assert.ok(running(pid));
      void post({ type: "agent.session.input.cancel" });
    }
    if (e.type === "agent.session.turn.cancelled" && e.turn_id === rootTurn) ended = true;
    return ended && e.type === "agent.session.idle";
  });
  const cancelled = seen.filter((x) => x.event.type === "agent.session.turn.cancelled")
    .map((x) => (x.event.turn as { subagent_id: string | null }).subagent_id);
  assert.equal(cancelled.length, 2);
  assert.equal(cancelled[1], null, "the root turn ends last");
  assert.ok(cancelled[0]?.startsWith("subagent_"));
  assert.equal(running(pid), false);
  const listed = await (await t.server.fetch("/process?running=true")).json();
  assert.deepEqual(listed.processes, []);
  const session = await t.client.beta.agents.sessions.retrieve(sessionId);
  assert.equal(session.status, "idle");
  // The subagent stays open (idle), its turn and its command marked as interrupted.
  const [sub] = (await t.client.beta.agents.sessions.subagents.list(sessionId)).data;
  assert.equal(sub.status, "active");
  const subItems = (await t.client.beta.agents.sessions.subagents.items.list(sub.id, {
    session_id: sessionId,
    order: "asc",
  })).data as unknown as Record<string, unknown>[];
  assert.deepEqual(subItems.map((i) => [i.type, i.status ?? null]), [
    ["agent_message", null],
    ["command_execution", "incomplete"],
  ]);
});
