/**
 * The items of the delegation tools, as the tool registry records them from each tool's
 * declaration (`runtime/tools/delegation.ts`, `runtime/tools/registry.ts`): a call whose agent
 * does not exist has no item and the model reads `not_found`; `send_input` with `interrupt` to a
 * working subagent records an `interrupt_subagent_call` before its own item; a `wait` hands the
 * subagent's answer over as an `agent_message` before its own item is done. Driven with the
 * official client against the scripted model and the real server.
 */

import assert from "node:assert/strict";
import { readEvents, runtimeSetup } from "./runtime_helpers.ts";

type Req = Record<string, unknown>;
type Input = { type: string; output?: string }[];
type Event = Record<string, unknown> & {
  item?: Record<string, unknown>;
  turn?: { id: string };
  turn_id?: string;
};

const isSubagent = (r: Req) => (r.instructions as string).includes("You are a subagent");
const mentions = (r: Req, text: string) => JSON.stringify(r.input).includes(text);
const outputsOf = (r: Req) =>
  (r.input as Input).filter((i) => i.type === "function_call_output").map((i) => i.output!);

Deno.test("delegation items: no item for an unknown agent, an interrupt before send_input, the answer before wait is done", async () => {
  await using t = await runtimeSetup();
  const { upstream } = t;
  const { sessionId } = await t.session({ multi_agent: { enabled: true } });
  const root = (r: Req) => !isSubagent(r);
  const agentId = (r: Req) => JSON.parse(outputsOf(r)[0]).agent_id as string;
  upstream.script.push(
    {
      match: (r) => root(r) && outputsOf(r).length === 0,
      output: [{ type: "function_call", name: "spawn_agent", arguments: { message: "Sleep" } }],
    },
    {
      match: (r) => isSubagent(r) && mentions(r, "Stop now"),
      output: [{ type: "message", text: "Stopped." }],
    },
    {
      match: (r) => isSubagent(r) && !mentions(r, "Stop now"),
      output: [{ type: "function_call", name: "shell", arguments: { command: "exec sleep 300" } }],
    },
    {
      match: (r) => root(r) && outputsOf(r).length === 1,
      output: (r) => [
        { type: "function_call", name: "send_input", arguments: { id: "nope", message: "Hi" } },
        {
          type: "function_call",
          name: "send_input",
          arguments: { id: agentId(r), message: "Stop now", interrupt: true },
        },
      ],
    },
    {
      match: (r) => root(r) && outputsOf(r).length === 3,
      output: (r) => [{ type: "function_call", name: "wait", arguments: { ids: [agentId(r)] } }],
    },
    {
      match: (r) => root(r) && outputsOf(r).length === 4,
      output: [{ type: "message", text: "Done." }],
    },
  );
  const stream = await t.server.fetch(`/v1/agents/sessions/${sessionId}/events`);
  let rootTurn = "";
  let ended = false;
  const reading = readEvents(stream, (e) => {
    if (e.type === "agent.session.turn.created" && !rootTurn) rootTurn = (e as Event).turn!.id;
    if (e.type === "agent.session.turn.completed" && (e as Event).turn!.id === rootTurn) {
      ended = true;
    }
    return ended && e.type === "agent.session.idle";
  });
  await t.client.beta.agents.sessions.events.create(sessionId, {
    events: [{
      type: "agent.session.input.message",
      input: [{ role: "user", content: [{ type: "input_text", text: "Go" }] }],
    }],
  });
  const events = (await reading).map((e) => e.event as Event);
  assert.equal(upstream.script.length, 0, "every scripted call was made");
  const theRoots = events.filter((e) =>
    (e.type === "agent.session.turn.item.added" || e.type === "agent.session.turn.item.done") &&
    e.turn_id === rootTurn && e.item!.type !== "message"
  );
  assert.deepEqual(
    theRoots.map((
      e,
    ) => [
      (e.type as string).slice("agent.session.turn.item.".length),
      e.item!.type,
      e.item!.status ?? null,
    ]),
    [
      ["added", "create_subagent_call", "in_progress"],
      ["done", "create_subagent_call", "completed"],
      // send_input to "nope": no item at all.
      ["added", "interrupt_subagent_call", "in_progress"],
      ["done", "interrupt_subagent_call", "completed"],
      ["added", "send_subagent_input_call", "in_progress"],
      ["done", "send_subagent_input_call", "completed"],
      ["added", "wait_for_subagents_call", "in_progress"],
      ["added", "agent_message", null],
      ["done", "wait_for_subagents_call", "completed"],
    ],
  );
  const message = theRoots.find((e) => e.item!.type === "agent_message")!.item!;
  assert.deepEqual(message.content, [{ type: "output_text", text: "Stopped." }]);
  // The model read the unknown agent as a tool error with its code.
  const third = upstream.requests.filter((r) => r.path.endsWith("/responses"))
    .map((r) => JSON.parse(r.body) as Req).find((r) => root(r) && outputsOf(r).length === 3)!;
  assert.match(outputsOf(third)[1], /^error \(not_found\): there is no agent with id 'nope'/);
});
