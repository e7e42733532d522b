/**
 * The items of a client function call, as the tool registry records them from the tool's
 * declaration (`runtime/tools/client_functions.ts`): the `function_call` is added already
 * completed (the call is the client's to answer), the session turns `requires_action`, and the
 * client's answer is a `function_call_output` that follows: its `output` as the client sent it
 * (a list of parts stays a list), or its `error` with the item `failed`, which the model reads as
 * `error: …`. Driven over HTTP against the real server and the scripted model.
 */

import assert from "node:assert/strict";
import { readEvents, runtimeSetup, WEATHER_TOOL } from "./runtime_helpers.ts";

type Event = Record<string, unknown> & { item?: Record<string, unknown>; turn_id?: string };
type Input = { type: string; output?: string }[];

Deno.test("client function items: completed call, requires_action, the client's answer or error as a function_call_output", async () => {
  await using t = await runtimeSetup();
  const { upstream } = t;
  const { sessionId } = await t.session({
    tools: [WEATHER_TOOL],
  });
  upstream.script.push(
    {
      output: [
        { type: "function_call", name: "get_weather", arguments: { city: "Paris" } },
        { type: "function_call", name: "get_weather", arguments: { city: "Atlantis" } },
      ],
    },
    { output: [{ type: "message", text: "Sunny in Paris." }] },
  );
  const stream = await t.server.fetch(`/v1/agents/sessions/${sessionId}/events`);
  const post = (event: Record<string, unknown>) =>
    t.server.post(`/v1/agents/sessions/${sessionId}/events`, { events: [event] });
  const answers = [
    { success: true, output: [{ type: "output_text", text: "sunny" }] },
    { success: false, error: "no such city" },
  ];
  const reading = readEvents(stream, (e) => {
    const ev = e as Event;
    if (ev.type === "agent.session.turn.item.done" && ev.item!.type === "function_call") {
      void post({
        type: "agent.session.input.tool_result",
        turn_id: ev.turn_id,
        call_id: ev.item!.call_id,
        ...answers.shift(),
      });
    }
    return e.type === "agent.session.idle";
  });
  await post({
    type: "agent.session.input.message",
    input: [{ role: "user", content: [{ type: "input_text", text: "Weather?" }] }],
  });
  const events = (await reading).map((e) => e.event as Event);
  const seen = events.flatMap((e) => {
    if (e.type === "agent.session.requires_action") return [["requires_action"]];
    if (!/item\.(added|done)$/.test(e.type as string) || e.item!.type === "message") return [];
    return [[(e.type as string).split(".").at(-1), e.item!.type, e.item!.status]];
  });
  assert.deepEqual(seen, [
    ["added", "function_call", "completed"],
    ["done", "function_call", "completed"],
    ["requires_action"],
    ["added", "function_call_output", "completed"],
    ["added", "function_call", "completed"],
    ["done", "function_call", "completed"],
    ["requires_action"],
    ["added", "function_call_output", "failed"],
  ]);
  const outputs = events.filter((e) =>
    e.type === "agent.session.turn.item.added" && e.item!.type === "function_call_output"
  ).map((e) => [e.item!.output, e.item!.error]);
  assert.deepEqual(outputs, [[[{ type: "output_text", text: "sunny" }], null], [
    null,
    "no such city",
  ]]);
  const second = await upstream.modelCall(2);
  const read = (second.input as Input).filter((i) => i.type === "function_call_output")
    .map((i) => i.output);
  assert.deepEqual(read, ['[{"type":"output_text","text":"sunny"}]', "error: no such city"]);
});
