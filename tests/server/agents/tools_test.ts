import assert from "node:assert/strict";
import OpenAI from "openai";
import { PATCH_NOTES_STEP, runtimeSetup, WEATHER_TOOL } from "./runtime_helpers.ts";

Deno.test("tools: a function tool answered by toolHandlers; the model gets the handler's output", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId } = await t.session({
    tools: [WEATHER_TOOL],
  });
  upstream.script.push(
    { output: [{ type: "function_call", name: "get_weather", arguments: { city: "Paris" } }] },
    { output: [{ type: "message", text: "Sunny in Paris." }] },
  );
  const seen: unknown[] = [];
  const result = await client.beta.agents.sessions.stream(sessionId, {
    input: "Weather in Paris?",
    toolHandlers: {
      get_weather: (args) => {
        seen.push(args);
        return { forecast: "sunny", city: args.city };
      },
    },
  }).finalResult();
  assert.deepEqual(seen, [{ city: "Paris" }]);
  assert.equal(result.turn.status, "completed");
  const second = await upstream.modelCall(2);
  const output = (second.input as { type: string; output?: string }[])
    .find((i) => i.type === "function_call_output")!;
  assert.deepEqual(JSON.parse(output.output!), { forecast: "sunny", city: "Paris" });
  // The tool is offered beside the built-in ones.
  assert.deepEqual((second.tools as { name: string }[]).map((x) => x.name), [
    "shell",
    "apply_patch",
    "get_weather",
  ]);
  const items = [];
  for await (const i of client.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
    items.push(i.type);
  }
  assert.deepEqual(items, ["message", "function_call", "function_call_output", "message"]);
});

Deno.test("tools: an answer for an unknown call is refused as the client's retry rule expects", async () => {
  await using t = await runtimeSetup();
  const { sessionId } = await t.session();
  const res = await t.server.post(`/v1/agents/sessions/${sessionId}/events`, {
    events: [{
      type: "agent.session.input.tool_result",
      turn_id: "turn_x",
      call_id: "call_nope",
      success: true,
      output: "x",
    }],
  });
  assert.equal(res.status, 400);
  assert.deepEqual((await res.json()).error, {
    message: "Unknown pending tool call: call_nope",
    type: "invalid_request_error",
    param: "events",
    code: "invalid_request_error",
  });
});

Deno.test("tools: a command the policy refuses is a tool error the model reads, with the guard's code, and audited", async () => {
  await using t = await runtimeSetup({
    policy: { endpoints: { agents: true }, deny_commands: ["rm"], audit: "deny" },
  });
  const { client, upstream } = t;
  const { sessionId, workspace } = await t.session();
  upstream.script.push(
    {
      output: [{
        type: "function_call",
        name: "shell",
        arguments: { command: "rm -rf notes.txt" },
      }],
    },
    {
      output: [{
        type: "function_call",
        name: "apply_patch",
        arguments: { input: "*** Begin Patch\n*** Add File: /etc/sandbar-test\n+x\n*** End Patch" },
      }],
    },
    { output: [{ type: "message", text: "I may not." }] },
  );
  const result = await client.beta.agents.sessions.stream(sessionId, { input: "Delete it." })
    .finalResult();
  assert.equal(result.turn.status, "completed");
  const last = await upstream.modelCall(3);
  const outputs = (last.input as { type: string; output?: string }[])
    .filter((i) => i.type === "function_call_output").map((i) => i.output!);
  assert.match(outputs[0], /^error \(command_not_allowed\): /);
  assert.match(outputs[1], /^error \(path_not_allowed\): /);
  assert.equal(await Deno.readTextFile(`${workspace}/notes.txt`), "hello\n");
  const items = [];
  for await (const i of client.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
    items.push(i);
  }
  const command = items.find((i) => i.type === "command_execution")!;
  assert.equal(command.type === "command_execution" && command.status, "failed");
  const audit = t.server.stderr().split("\n").filter((l) => l.includes('"agents.tool.'))
    .map((l) => JSON.parse(l));
  assert.deepEqual(audit.map((a) => [a.endpoint, a.decision, a.code]), [
    ["agents.tool.shell", "deny", "command_not_allowed"],
    ["agents.tool.apply_patch", "deny", "path_not_allowed"],
  ]);
});

Deno.test("tools: a patch that cannot apply to one file changes no file", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId, workspace } = await t.session();
  upstream.script.push(
    {
      output: [{
        type: "function_call",
        name: "apply_patch",
        arguments: {
          input: "*** Begin Patch\n*** Add File: new.txt\n+new\n" +
            "*** Update File: notes.txt\n@@\n-not there\n+x\n*** End Patch",
        },
      }],
    },
    { output: [{ type: "message", text: "It failed." }] },
  );
  await client.beta.agents.sessions.stream(sessionId, { input: "Patch." }).finalResult();
  const last = await upstream.modelCall(2);
  const output = (last.input as { type: string; output?: string }[])
    .find((i) => i.type === "function_call_output")!.output!;
  assert.match(output, /^error \(invalid_patch\): notes\.txt: chunk 1: these lines were not found/);
  await assert.rejects(Deno.stat(`${workspace}/new.txt`), Deno.errors.NotFound);
  assert.equal(await Deno.readTextFile(`${workspace}/notes.txt`), "hello\n");
});

Deno.test("tools: a session owner without process:run or files:write gets missing_scope from shell and apply_patch, naming the scope", async () => {
  await using t = await runtimeSetup({
    policy: {
      endpoints: { agents: true },
      identities: [{ id: "agentonly", token: "agent-only-token-0123456789", scopes: ["agents:*"] }],
    },
  });
  const { upstream } = t;
  const agentOnly = new OpenAI({
    baseURL: `${t.server.url}/v1`,
    apiKey: "agent-only-token-0123456789",
    maxRetries: 0,
  });
  const env = await agentOnly.beta.agents.environments.create({
    environment: { type: "openai_hosted" },
  });
  const session = await agentOnly.beta.agents.sessions.create({
    environment: { type: "openai_hosted", environment_id: env.id },
    agent: { model: "gpt-test" },
  });
  upstream.script.push(
    { output: [{ type: "function_call", name: "shell", arguments: { command: ["true"] } }] },
    PATCH_NOTES_STEP,
    { output: [{ type: "message", text: "I may not." }] },
  );
  const result = await agentOnly.beta.agents.sessions.stream(session.id, { input: "Try." })
    .finalResult();
  assert.equal(result.turn.status, "completed");
  const last = await upstream.modelCall(3);
  const outputs = (last.input as { type: string; output?: string }[])
    .filter((i) => i.type === "function_call_output").map((i) => i.output!);
  assert.deepEqual(outputs, [
    "error (missing_scope): Running commands needs the scope process:run",
    "error (missing_scope): Editing files needs the scope files:write",
  ]);
});
