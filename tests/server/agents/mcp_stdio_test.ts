/**
 * MCP tools over stdio: the fixture server (the SDK's server side, run by `deno run`) started
 * by `openMcpTools` through the real server's process layer, its tools listed and called, and
 * the guards and failures as the runtime will see them.
 */

import assert from "node:assert/strict";
import { openMcpTools } from "../../../server/agents/mcp/tool_set.ts";
import { McpRequiredServerError } from "../../../server/agents/mcp/errors.ts";
import type { McpToolConfig } from "../../../server/agents/mcp/types.ts";
import { running, startMcpHarness, stdioFixtureCommand } from "./fixtures/mcp/harness.ts";

function stdio(
  label: string,
  extra: Partial<McpToolConfig> = {},
  cwd = "/workspace",
): McpToolConfig {
  return {
    type: "mcp",
    server_label: label,
    transport: { type: "stdio", ...stdioFixtureCommand(), cwd },
    ...extra,
  } as McpToolConfig;
}

type ProcessInfo = { pid: number; tag: string | null; running: boolean };

Deno.test("mcp stdio: tools listed and called through the process table; close ends the group", async () => {
  await using h = await startMcpHarness();
  const workspace = `${h.root}/ws`;
  await Deno.mkdir(`${workspace}/sub`, { recursive: true });
  const set = await openMcpTools(
    [stdio("local", {}, "/workspace/sub"), stdio("narrow", { allowed_tools: ["add"] })],
    h.ctx({ workspace, env: { MCP_MARKER: "marker-1" }, reservedNames: ["local__fail"] }),
  );
  try {
    assert.deepEqual(set.failures, []);
    assert.deepEqual(set.tools.map((t) => t.name), [
      "local__echo",
      "local__add",
      "local__fail_2",
      "local__where",
      "local__spawn_sleeper",
      "narrow__add",
    ]);
    const echo = set.lookup("local__echo")!;
    assert.equal(echo.serverLabel, "local");
    assert.equal(echo.toolName, "echo");
    assert.equal(echo.description, "Answer the text it was given");
    assert.deepEqual(Object.keys(echo.parameters.properties as object), ["text"]);

    assert.deepEqual(await set.call("local__echo", { text: "hello" }), {
      output: "hello",
      isError: false,
    });
    assert.deepEqual(await set.call("narrow__add", '{"a": 2, "b": 40}'), {
      output: "42",
      isError: false,
    });
    assert.deepEqual(await set.call("local__fail_2", {}), {
      output: "it failed on purpose",
      isError: true,
    });
    // Not offered, so not callable: allowed_tools is a boundary, not a hint.
    const hidden = await set.call("narrow__echo", { text: "x" });
    assert.equal(hidden.isError, true);
    assert.match(hidden.output, /no MCP tool named narrow__echo/);
    // A bad argument is the server's validation error, for the model to correct.
    const bad = await set.call("local__add", { a: "two" });
    assert.equal(bad.isError, true);
    assert.match(bad.output, /Invalid arguments for tool add: .*expected number, received string/);

    const where = JSON.parse((await set.call("local__where", {})).output);
    assert.equal(where.cwd, await Deno.realPath(`${workspace}/sub`));
    assert.equal(where.marker, "marker-1");

    // Both servers are in the caller's process table, tagged with their label.
    const listed = (await h.api("/process")).processes as ProcessInfo[];
    const mine = listed.filter((p) => p.tag?.startsWith("mcp:"));
    assert.deepEqual(mine.map((p) => p.tag).sort(), ["mcp:local", "mcp:narrow"]);
    assert.ok(mine.every((p) => p.running));
    const leaders = mine.map((p) => p.pid);
    assert.ok(leaders.includes(where.pid));

    const sleeper = Number((await set.call("local__spawn_sleeper", {})).output);
    assert.ok(running(sleeper));

    await set.close();
    for (const pid of [...leaders, sleeper]) assert.equal(running(pid), false, `pid ${pid}`);
    const after = (await h.api("/process")).processes as ProcessInfo[];
    assert.deepEqual(after.filter((p) => p.tag?.startsWith("mcp:")), []);
    await assert.rejects(() => set.call("local__echo", { text: "late" }), /closed/);
  } finally {
    await set.close();
  }
});

Deno.test("mcp stdio: a command the policy refuses is a guard error, fatal only when required", async () => {
  await using h = await startMcpHarness({ allow_commands: ["sleep"] });
  const set = await openMcpTools([stdio("local")], h.ctx());
  assert.deepEqual(set.tools, []);
  assert.equal(set.failures.length, 1);
  const failure = set.failures[0].error;
  assert.equal(failure.code, "process_denied");
  assert.equal(failure.param, "transport.command");
  assert.match(failure.message, /^MCP server 'local': Program refused/);
  await set.close();

  const e = await openMcpTools([stdio("local", { required: true })], h.ctx()).then(
    () => assert.fail("a required server that is refused must fail"),
    (e) => e,
  );
  assert.ok(e instanceof McpRequiredServerError);
  assert.equal(e.serverLabel, "local");
  assert.equal(e.code, "process_denied");
  assert.match(e.message, /required MCP server 'local' could not be used: Program refused/);
  const listed = (await h.api("/process")).processes as ProcessInfo[];
  assert.deepEqual(listed, []);
});

Deno.test("mcp stdio: a cwd outside the allowed paths is refused by the path guard", async () => {
  await using h = await startMcpHarness();
  const set = await openMcpTools([stdio("local", {}, "/etc")], h.ctx());
  assert.equal(set.failures[0].error.code, "path_not_allowed");
  assert.equal(set.failures[0].error.param, "transport.cwd");
  await set.close();
});

Deno.test("mcp stdio: a server that exits before answering, and one that dies mid-session", async () => {
  await using h = await startMcpHarness();
  const dying: McpToolConfig = {
    type: "mcp",
    server_label: "dying",
    required: true,
    transport: {
      type: "stdio",
      command: Deno.execPath(),
      args: ["eval", "console.error('no config found'); Deno.exit(3)"],
      cwd: h.root,
    },
  };
  const e = await openMcpTools([dying], h.ctx()).then(() => assert.fail("must fail"), (e) => e);
  assert.ok(e instanceof McpRequiredServerError);
  assert.equal(e.code, "mcp_unavailable");
  assert.match(
    e.message,
    /exited with code 3 before it answered; its stderr ends with: no config found/,
  );

  const set = await openMcpTools([stdio("local", {}, h.root)], h.ctx());
  try {
    const { pid } = JSON.parse((await set.call("local__where", {})).output);
    await h.api(`/process/${pid}/signal`, { signal: "SIGKILL" });
    const after = await set.call("local__echo", { text: "anyone?" });
    assert.equal(after.isError, true);
    // The broken stdin pipe is often noticed before the exit is reaped; the caller must still
    // hear why the server died, not which pipe noticed first.
    assert.match(after.output, /^MCP server 'local': the server was killed by SIGKILL/);
  } finally {
    await set.close();
  }
});

Deno.test("mcp stdio: stopping the server ends MCP servers the runtime left open", async () => {
  const h = await startMcpHarness();
  try {
    const set = await openMcpTools([stdio("local", {}, h.root)], h.ctx());
    const { pid } = JSON.parse((await set.call("local__where", {})).output);
    assert.ok(running(pid));
    await h.server.close();
    assert.equal(running(pid), false);
  } finally {
    await h.close();
  }
});
