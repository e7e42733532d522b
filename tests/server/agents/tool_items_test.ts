/**
 * The item of each tool call, as the tool registry keeps it (`runtime/tools/registry.ts`): one
 * item per call, added and finished at the one output index the call was given, in the order
 * clients read. What stays each tool's: `shell` and `apply_patch` add their item before checking
 * the arguments (a bad call is a failed item; `apply_patch` follows it with a
 * `function_call_output` that carries the error), a delegation tool only once its arguments are
 * valid (a bad call has no item). Driven with the official client against the scripted model.
 */

import assert from "node:assert/strict";
import { readEvents, runtimeSetup } from "./runtime_helpers.ts";

type Event = Record<string, unknown> & { item?: Record<string, unknown>; output_index?: number };

Deno.test("tool items: one per call, added and done at its own output index, bad calls as each tool records them", async () => {
  await using t = await runtimeSetup();
  const { client, upstream, server } = t;
  const { sessionId } = await t.session({ multi_agent: { enabled: true } });
  upstream.script.push(
    {
      output: [
        { type: "function_call", name: "shell", arguments: { command: 5 } },
        { type: "function_call", name: "spawn_agent", arguments: { nickname: "no message" } },
        { type: "function_call", name: "apply_patch", arguments: { patch: "not input" } },
        { type: "function_call", name: "shell", arguments: { command: "echo hi" } },
      ],
    },
    { output: [{ type: "message", text: "Done." }] },
  );
  const stream = await server.fetch(`/v1/agents/sessions/${sessionId}/events`, {
    headers: { accept: "text/event-stream" },
  });
  const reading = readEvents(stream, (e) => e.type === "agent.session.idle");
  await client.beta.agents.sessions.events.create(sessionId, {
    events: [{
      type: "agent.session.input.message",
      input: [{ role: "user", content: [{ type: "input_text", text: "Go" }] }],
    }],
  });
  const events = (await reading).map((e) => e.event as Event);
  const items = events.filter((e) =>
    e.type === "agent.session.turn.item.added" || e.type === "agent.session.turn.item.done"
  );
  const toolTypes = ["command_execution", "function_call", "function_call_output"];
  const calls = items.filter((e) =>
    toolTypes.includes(e.item!.type as string) || /subagent/.test(e.item!.type as string)
  );
  const seen = calls.map((e) => [
    e.type === "agent.session.turn.item.added" ? "added" : "done",
    e.item!.type,
    e.item!.status,
  ]);
  assert.deepEqual(seen, [
    ["added", "command_execution", "in_progress"],
    ["done", "command_execution", "failed"],
    // spawn_agent without a message: no item at all.
    ["added", "function_call", "in_progress"],
    ["done", "function_call", "failed"],
    ["added", "function_call_output", "failed"],
    ["added", "command_execution", "in_progress"],
    ["done", "command_execution", "completed"],
  ]);
  // Each call's added and done share its item id and its output index; the indexes differ.
  const byId = new Map<string, Event[]>();
  for (const e of calls) {
    byId.set(e.item!.id as string, [...(byId.get(e.item!.id as string) ?? []), e]);
  }
  const indexes = new Set<number>();
  for (const [id, pair] of byId) {
    if (pair[0].item!.type === "function_call_output") {
      assert.equal(pair[0].output_index, null, id);
      continue;
    }
    assert.equal(pair.length, 2, id);
    assert.equal(pair[0].output_index, pair[1].output_index, id);
    indexes.add(pair[0].output_index!);
  }
  assert.equal(indexes.size, 3);
  const [badShell, , , goodShell] = [...byId.values()].map((p) => p.at(-1)!.item!);
  assert.match(badShell.output as string, /^error \(invalid_arguments\)/);
  const output = [...byId.values()][2][0].item!;
  assert.match(output.error as string, /^error \(invalid_patch\)/);
  assert.equal(goodShell.exit_code, 0);
  assert.equal(goodShell.output, "hi\n");
  // The model was told of the spawn_agent mistake all the same.
  const second = await upstream.modelCall(2);
  assert.match(JSON.stringify(second.input), /invalid_arguments/);
});
