import assert from "node:assert/strict";
import { PATCH_NOTES_STEP, runtimeSetup } from "./runtime_helpers.ts";

Deno.test("turn: shell (echo, a slow command writing outputs/report.txt), apply_patch, answer; deltas while the command runs; the artifact published", async () => {
  await using t = await runtimeSetup();
  const { client, upstream } = t;
  const { sessionId, workspace } = await t.session();
  const slow = "echo started; while [ ! -f go ]; do sleep 0.02; done; " +
    "mkdir -p outputs && printf 'quarterly report' > outputs/report.txt; echo finished";
  upstream.script.push(
    {
      output: [{ type: "function_call", name: "shell", arguments: { command: ["echo", "hello"] } }],
    },
    {
      output: [
        { type: "message", text: "Writing the report." },
        { type: "function_call", name: "shell", arguments: { command: slow } },
      ],
    },
    PATCH_NOTES_STEP,
    { output: [{ type: "message", text: "Done: the report is in outputs." }] },
  );
  const stream = client.beta.agents.sessions.stream(sessionId, { input: "Write the report." })
    .withResultCollection();
  const types: string[] = [];
  const deltas: string[] = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "agent.output.command_execution_output.delta") {
      deltas.push(event.delta);
      // The command waits for this file: were its output not streamed while it runs, the
      // turn would never end.
      if (event.delta.includes("started")) await Deno.writeTextFile(`${workspace}/go`, "");
    }
  }
  const result = await stream.finalResult();
  assert.equal(result.turn.status, "completed");
  assert.deepEqual(
    result.messages.map((m) =>
      m.content.map((c) => c.type === "output_text" ? c.text : "").join("")
    ),
    ["Done: the report is in outputs."],
  );
  assert.ok(deltas.join("").includes("hello\n"));
  assert.ok(deltas.join("").includes("finished"));
  assert.equal(await Deno.readTextFile(`${workspace}/notes.txt`), "hello world\n");
  assert.equal(types.at(-1), "agent.session.idle");
  assert.equal(types.at(-2), "agent.session.turn.completed");

  // The model is told the workspace's real path, the one its commands see, and never a
  // /workspace its commands could not open.
  const first = await upstream.modelCall(1);
  const instructions = String(first.instructions);
  assert.match(
    instructions,
    new RegExp(`working in the directory ${workspace} \\(the workspace\\)`),
  );
  assert.match(instructions, /there is no \/workspace directory/);
  assert.doesNotMatch(instructions, /also named \/workspace/);

  // The model saw each command's output and the patch's result.
  const last = await upstream.modelCall(4);
  const outputs = (last.input as { type: string; output?: string }[])
    .filter((i) => i.type === "function_call_output").map((i) => i.output!);
  assert.match(outputs[0], /Exit code: 0[\s\S]*hello/);
  assert.match(outputs[1], /finished/);
  assert.match(outputs[2], /^Success\. Updated the following files:\nM notes\.txt/);

  // The artifact is listed and its content is what the command wrote, even after the file
  // changes in the workspace.
  await Deno.writeTextFile(`${workspace}/outputs/report.txt`, "changed later");
  const artifacts = [];
  for await (const a of client.beta.agents.sessions.artifacts.list(sessionId)) artifacts.push(a);
  assert.deepEqual(artifacts.map((a) => [a.path, a.size_bytes, a.turn_id]), [
    ["/workspace/outputs/report.txt", 16, result.turn.id],
  ]);
  const content = await client.beta.agents.sessions.artifacts.content(artifacts[0].id, {
    session_id: sessionId,
  });
  assert.equal(await content.text(), "quarterly report");

  // The command is a command_execution item with its exit code and output.
  const items = [];
  for await (const item of client.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
    items.push(item);
  }
  const commands = items.filter((i) => i.type === "command_execution");
  assert.deepEqual(
    commands.map((c) => c.type === "command_execution" && [c.command, c.exit_code]),
    [
      ["echo hello", 0],
      [slow, 0],
    ],
  );
  const session = await client.beta.agents.sessions.retrieve(sessionId);
  assert.equal(session.status, "idle");
  assert.equal(session.usage?.total_tokens, 60);
  assert.equal(result.turn.usage?.total_tokens, 60);
});
