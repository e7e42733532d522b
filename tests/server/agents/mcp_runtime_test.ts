/**
 * MCP tools in sessions, end to end: the official client, the real server (a child process)
 * and the scripted upstream. The model calls a tool of a stdio server the session starts in
 * the sandbox and of an HTTP server on loopback behind a vault's `static_bearer` credential;
 * each call is an `mcp_call` item; a URL the guard refuses is a tool error the model reads;
 * deleting the session leaves no MCP process.
 */

import assert from "node:assert/strict";
import { DENO_DIR, fixturePaths, running, stdioFixtureCommand } from "./fixtures/mcp/harness.ts";
import { startHttpMcpServer } from "./fixtures/mcp/http_server.ts";
import { runtimeSetup } from "./runtime_helpers.ts";
import type { RuntimeSetup } from "./runtime_helpers.ts";

type Input = { type: string; output?: string; call_id?: string }[];

async function items(t: RuntimeSetup, sessionId: string) {
  const out = [];
  for await (const i of t.client.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
    out.push(i as unknown as Record<string, unknown>);
  }
  return out;
}

function outputs(call: Record<string, unknown>): string[] {
  return (call.input as Input).filter((i) => i.type === "function_call_output")
    .map((i) => i.output!);
}

async function mcpProcesses(t: RuntimeSetup): Promise<{ pid: number; tag: string }[]> {
  const listed = await (await t.server.fetch("/process")).json();
  return (listed.processes as { pid: number; tag: string | null }[])
    .filter((p) => p.tag?.startsWith("mcp:")) as { pid: number; tag: string }[];
}

Deno.test("mcp in a session: the model calls a stdio server's tools; deleting the session ends the server", async () => {
  // The fixture server is Deno code of this repository with npm packages from Deno's cache: the
  // policy admits both read-only, as every process the server starts is confined to the policy.
  const root = await Deno.makeTempDir({ prefix: "sandbar-mcp-runtime-" });
  await using _root = { [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }) };
  await using t = await runtimeSetup({
    root,
    policy: { endpoints: { agents: true }, paths: fixturePaths(root) },
    env: { DENO_DIR },
  });
  const { client, upstream } = t;
  const { sessionId, workspace } = await t.session({
    tools: [{
      type: "mcp",
      server_label: "local",
      transport: { type: "stdio", ...stdioFixtureCommand(), cwd: "/workspace" },
    }],
  });
  upstream.script.push(
    {
      output: [
        { type: "function_call", name: "local__echo", arguments: { text: "hi there" } },
        { type: "function_call", name: "local__fail", arguments: {} },
        { type: "function_call", name: "local__where", arguments: {} },
      ],
    },
    { output: [{ type: "message", text: "Echoed." }] },
  );
  const result = await client.beta.agents.sessions.stream(sessionId, { input: "Echo it." })
    .finalResult();
  assert.equal(result.turn.status, "completed");

  const first = await upstream.modelCall(1);
  const names = (first.tools as { name: string }[]).map((x) => x.name);
  assert.deepEqual(names.filter((n) => n.startsWith("local__")), [
    "local__echo",
    "local__add",
    "local__fail",
    "local__where",
    "local__spawn_sleeper",
  ]);
  const [echo, fail, where] = outputs(await upstream.modelCall(2));
  assert.equal(echo, "hi there");
  assert.equal(fail, "error (mcp_tool_error): it failed on purpose");
  const server = JSON.parse(where);
  // The server runs in the session's workspace, in the owner's process table.
  assert.equal(server.cwd, await Deno.realPath(workspace));

  const calls = (await items(t, sessionId)).filter((i) => i.type === "mcp_call");
  assert.deepEqual(
    calls.map((c) => [c.server_label, c.name, c.arguments, c.output, c.error, c.status]),
    [
      ["local", "echo", { text: "hi there" }, "hi there", null, "completed"],
      ["local", "fail", {}, null, "it failed on purpose", "failed"],
      ["local", "where", {}, where, null, "completed"],
    ],
  );

  // The server stays up between turns, and is used again by the next one.
  const before = await mcpProcesses(t);
  assert.deepEqual(before.map((p) => p.tag), ["mcp:local"]);
  assert.ok(running(server.pid));
  upstream.script.push(
    { output: [{ type: "function_call", name: "local__add", arguments: { a: 2, b: 40 } }] },
    { output: [{ type: "message", text: "42." }] },
  );
  await client.beta.agents.sessions.stream(sessionId, { input: "Add." }).finalResult();
  assert.deepEqual(outputs(await upstream.modelCall(4)).at(-1), "42");
  assert.deepEqual((await mcpProcesses(t)).map((p) => p.pid), before.map((p) => p.pid));

  await client.beta.agents.sessions.delete(sessionId);
  assert.equal(running(server.pid), false);
  assert.deepEqual(await mcpProcesses(t), []);
});

Deno.test("mcp in a session: an HTTP server on loopback behind a static_bearer credential", async () => {
  const token = "bearer-for-web-0123456789";
  const web = startHttpMcpServer(token);
  try {
    await using t = await runtimeSetup({
      policy: { endpoints: { agents: true }, url_allow: ["http://127.0.0.1:*"] },
    });
    const { client, upstream } = t;
    const vault = await client.beta.agents.vaults.create({ name: "mcp" });
    const credential = await client.beta.agents.vaults.credentials.create(vault.id, {
      name: "web",
      auth: { type: "static_bearer", token, mcp_server_url: web.mcpUrl },
    });
    const session = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      vault_ids: [vault.id],
      agent: {
        model: "gpt-test",
        tools: [{
          type: "mcp",
          server_label: "web",
          transport: { type: "http", server_url: web.mcpUrl },
          credential_id: credential.id,
          allowed_tools: ["shout"],
        }],
      },
    });
    upstream.script.push(
      { output: [{ type: "function_call", name: "web__shout", arguments: { text: "hello" } }] },
      { output: [{ type: "message", text: "Shouted." }] },
    );
    const result = await client.beta.agents.sessions.stream(session.id, { input: "Shout." })
      .finalResult();
    assert.equal(result.turn.status, "completed");
    assert.deepEqual(
      ((await upstream.modelCall(1)).tools as { name: string }[]).map((x) => x.name),
      ["web__shout"],
    );
    assert.deepEqual(outputs(await upstream.modelCall(2)), ["HELLO"]);
    assert.ok(web.seen.includes(`Bearer ${token}`));
    const call = (await items(t, session.id)).find((i) => i.type === "mcp_call")!;
    assert.deepEqual([call.server_label, call.name, call.output, call.status], [
      "web",
      "shout",
      "HELLO",
      "completed",
    ]);
    // The token is in no answer and no event.
    const events = await (await t.server.fetch(`/v1/agents/sessions/${session.id}/items`)).text();
    assert.ok(!events.includes(token));
  } finally {
    await web.close();
  }
});

Deno.test("mcp in a session: a URL the guard refuses is a tool error the model reads; required fails the turn", async () => {
  const web = startHttpMcpServer("never-sent-0123456789");
  try {
    await using t = await runtimeSetup();
    const { client, upstream } = t;
    const tool = {
      type: "mcp" as const,
      server_label: "web",
      transport: { type: "http" as const, server_url: web.mcpUrl },
    };
    const { sessionId } = await t.session({ tools: [tool] });
    upstream.script.push(
      { output: [{ type: "function_call", name: "web__shout", arguments: { text: "x" } }] },
      { output: [{ type: "message", text: "It is refused." }] },
    );
    const result = await client.beta.agents.sessions.stream(sessionId, { input: "Shout." })
      .finalResult();
    assert.equal(result.turn.status, "completed");
    const first = await upstream.modelCall(1);
    assert.match(first.instructions as string, /- web: error \(url_denied\): MCP server 'web'/);
    assert.ok(!(first.tools as { name: string }[]).some((x) => x.name.startsWith("web__")));
    const [output] = outputs(await upstream.modelCall(2));
    assert.match(output, /^error \(url_denied\): MCP server 'web': URL .* is refused/);
    const call = (await items(t, sessionId)).find((i) => i.type === "mcp_call")!;
    assert.equal(call.status, "failed");
    assert.match(call.error as string, /^error \(url_denied\)/);

    const required = await t.session({ tools: [{ ...tool, required: true }] });
    const failed = await client.beta.agents.sessions.stream(required.sessionId, { input: "Go." })
      .finalResult().catch((e) => e);
    assert.ok(failed instanceof Error);
    const turns = await client.beta.agents.sessions.turns.list(required.sessionId);
    assert.equal(turns.data[0].status, "failed");
    assert.equal(turns.data[0].error?.code, "connection_failed");
    assert.match(
      turns.data[0].error!.message,
      /^The required MCP server 'web' could not be used: URL .* is refused/,
    );
    assert.deepEqual(web.seen, []);
  } finally {
    await web.close();
  }
});
