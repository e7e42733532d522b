import assert from "node:assert/strict";
import { AgentTurnResultError } from "openai/lib/beta/agents/agent-turn-result-error";
import { runtimeSetup } from "./runtime_helpers.ts";

/** Processes whose process group is `pgid`, that have not exited. */
async function groupMembers(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${e.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z") out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

async function pidWithCmdline(marker: string): Promise<number> {
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = await Deno.readTextFile(`/proc/${e.name}/cmdline`);
      if (cmd.includes(marker) && !cmd.includes("deno")) return Number(e.name);
    } catch { /* gone */ }
  }
  throw new Error(`no process with ${marker}`);
}

Deno.test("control: cancel of a turn running `sleep 60` kills its process group; the turn is cancelled, the session idle", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId } = await t.session();
  const marker = `cancel-${crypto.randomUUID()}`;
  upstream.script.push({
    output: [{
      type: "function_call",
      name: "shell",
      arguments: { command: `echo started; sleep 60; echo ${marker}` },
    }],
  });
  const stream = client.beta.agents.sessions.stream(sessionId, { input: "Wait." });
  let pgid = 0;
  const types: string[] = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "agent.output.command_execution_output.delta" && pgid === 0) {
      pgid = await pidWithCmdline(marker);
      assert.notDeepEqual(await groupMembers(pgid), []);
      await client.beta.agents.sessions.events.create(sessionId, {
        events: [{ type: "agent.session.input.cancel" }],
      });
    }
  }
  assert.deepEqual(types.slice(-2), ["agent.session.turn.cancelled", "agent.session.idle"]);
  assert.deepEqual(await groupMembers(pgid), []);
  const turns = [];
  for await (const turn of client.beta.agents.sessions.turns.list(sessionId)) turns.push(turn);
  assert.deepEqual(turns.map((x) => x.status), ["cancelled"]);
  assert.equal((await client.beta.agents.sessions.retrieve(sessionId)).status, "idle");
  // The next turn works, and the model sees the interrupted call answered.
  upstream.script.push({ output: [{ type: "message", text: "Back." }] });
  const next = await client.beta.agents.sessions.stream(sessionId, { input: "Again." })
    .finalResult();
  assert.equal(next.turn.status, "completed");
  const input = (await upstream.modelCall(2)).input as { type: string; output?: string }[];
  assert.match(
    input.find((i) => i.type === "function_call_output")!.output!,
    /interrupted|Exit code/,
  );
});

Deno.test("control: a message during a turn steers it: the next model call has it, in the same turn", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId } = await t.session();
  const gate = Promise.withResolvers<void>();
  upstream.script.push(
    { output: [{ type: "message", text: "Working on Paris." }], gate: gate.promise },
    { output: [{ type: "message", text: "Lyon, then." }] },
  );
  const result = client.beta.agents.sessions.stream(sessionId, { input: "Paris?" }).finalResult();
  await upstream.modelCall(1);
  await client.beta.agents.sessions.events.create(sessionId, {
    events: [{
      type: "agent.session.input.message",
      input: [{ role: "user", content: [{ type: "input_text", text: "Actually, Lyon." }] }],
    }],
  });
  gate.resolve();
  const done = await result;
  assert.deepEqual(
    done.messages.map((m) => m.content[0].type === "output_text" && m.content[0].text),
    [
      "Lyon, then.",
    ],
  );
  const second = (await upstream.modelCall(2)).input as { role?: string; content?: unknown }[];
  assert.deepEqual(second.filter((i) => i.role === "user").map((i) => i.content), [
    [{ type: "input_text", text: "Paris?" }],
    [{ type: "input_text", text: "Actually, Lyon." }],
  ]);
  const turns = [];
  for await (const turn of client.beta.agents.sessions.turns.list(sessionId)) turns.push(turn);
  assert.equal(turns.length, 1);
});

Deno.test("control: delete while a turn runs is 409 and not retried; a failed upstream fails the turn, the session idle", async () => {
  await using t = await runtimeSetup();
  const { client, upstream, server } = t;
  const { sessionId } = await t.session();
  const gate = Promise.withResolvers<void>();
  upstream.script.push({ output: [{ type: "message", text: "x" }], gate: gate.promise });
  const result = client.beta.agents.sessions.stream(sessionId, { input: "Go." }).finalResult();
  await upstream.modelCall(1);
  const res = await server.fetch(`/v1/agents/sessions/${sessionId}`, { method: "DELETE" });
  assert.equal(res.status, 409);
  assert.equal(res.headers.get("x-should-retry"), "false");
  await res.body?.cancel();
  gate.resolve();
  await result;
  // An unknown model: the upstream refuses, the turn fails with the reason.
  await client.beta.agents.sessions.update(sessionId, { agent: { model: "gpt-nope" } });
  const failed = await client.beta.agents.sessions.stream(sessionId, { input: "Go." })
    .finalResult().catch((e) => e);
  assert.ok(failed instanceof AgentTurnResultError);
  assert.equal(failed.turn?.status, "failed");
  assert.equal(failed.turn?.error?.code, "resource_not_found");
  assert.equal((await client.beta.agents.sessions.retrieve(sessionId)).status, "idle");
  const deleted = await client.beta.agents.sessions.delete(sessionId);
  assert.deepEqual(deleted, { id: sessionId, deleted: true, object: "agent.session.deleted" });
});
