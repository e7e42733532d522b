/**
 * Tenants of the agents group, tried as an attacker would with three identities on one server:
 * the default identity (every scope, so an operator: `*` covers `agents:admin`), `low` (only
 * `agents:read` and `agents:write`) and `other` (the agents scopes and the process, files and
 * code scopes). Each check is judged by its side effect: a marker file not written, a 404 whose
 * status, headers and body are those of a missing id, a list without another's objects, an
 * object unchanged after another's update or delete.
 */

import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { rejection } from "./helpers.ts";
import { runtimeSetup } from "./runtime_helpers.ts";

const LOW = "low-token-0123456789abcdef";
const OTHER = "other-token-0123456789abcdef";

const POLICY = {
  endpoints: { agents: true },
  identities: [
    { id: "low", token: LOW, scopes: ["agents:read", "agents:write"] },
    {
      id: "other",
      token: OTHER,
      scopes: ["agents:read", "agents:write", "process:*", "files:*", "code:*"],
    },
  ],
};

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** A raw answer, with the asked id written `<id>` so two ids' answers compare. */
async function answer(
  url: string,
  token: string,
  method: string,
  path: string,
  id: string,
  body?: unknown,
): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${url}${path.replaceAll("{id}", id)}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    text: (await res.text()).replaceAll(id, "<id>"),
  };
}

/** A missing id shaped like `id` (same prefix, same length). */
function missing(id: string): string {
  const cut = id.indexOf("_") + 1;
  return id.slice(0, cut) + "0".repeat(id.length - cut);
}

Deno.test("tenants: low updating the operator's session with an mcp stdio tool is a 404, and its command never runs", async () => {
  await using t = await runtimeSetup({ policy: POLICY });
  const { client, upstream, server } = t;
  const low = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: LOW, maxRetries: 0 });
  const { sessionId, workspace } = await t.session();
  const marker = `${workspace}/marker-low`;
  const tool = (file: string) => ({
    type: "mcp" as const,
    server_label: "planted",
    transport: {
      type: "stdio" as const,
      command: "/bin/sh",
      args: ["-c", `touch ${file}`],
      cwd: "/workspace",
    },
  });

  const refused = await rejection(() =>
    low.beta.agents.sessions.update(sessionId, { agent: { tools: [tool(marker)] } } as never)
  );
  assert.equal(refused.status, 404);
  // The same answer as for an id that does not exist: no existence oracle.
  const body = { agent: { tools: [tool(marker)] } };
  const path = "/v1/agents/sessions/{id}";
  assert.deepEqual(
    await answer(server.url, LOW, "POST", path, sessionId, body),
    await answer(server.url, LOW, "POST", path, missing(sessionId), body),
  );
  // Nor may low post the message that would run it.
  const posted = await rejection(() =>
    low.beta.agents.sessions.events.create(sessionId, {
      events: [{ type: "agent.session.input.message", input: "go" }],
    } as never)
  );
  assert.equal(posted.status, 404);

  // The operator's own turn runs: the session's tools are as it made them, so nothing is written.
  upstream.script.push({ output: [{ type: "message", text: "Done." }] });
  const first = await client.beta.agents.sessions.stream(sessionId, { input: "Hi." })
    .finalResult();
  assert.equal(first.turn.status, "completed");
  assert.equal(await exists(marker), false, "low's command ran under the operator's policy");
  const kept = await client.beta.agents.sessions.retrieve(sessionId);
  assert.deepEqual(kept.agent.tools, []);

  // The control: the same tool added by the session's owner does run (so the check above could
  // fail), under the owner's policy.
  const own = `${workspace}/marker-owner`;
  await client.beta.agents.sessions.update(sessionId, { agent: { tools: [tool(own)] } } as never);
  upstream.script.push({ output: [{ type: "message", text: "Done." }] });
  await client.beta.agents.sessions.stream(sessionId, { input: "Again." }).finalResult();
  assert.equal(await exists(own), true, "the owner's own stdio tool did not run");
});

Deno.test("tenants: another identity's id answers exactly as a missing one on every route of every kind; nothing changes", async () => {
  await using t = await runtimeSetup({ policy: POLICY });
  const { client, server, upstream } = t;
  const url = server.url;
  // The operator's resources of every kind.
  const agent = await client.beta.agents.create({ model: "gpt-test", name: "admin-agent" });
  const vault = await client.beta.agents.vaults.create({ name: "admin-vault" });
  const credential = await client.beta.agents.vaults.credentials.create(vault.id, {
    name: "key",
    auth: {
      type: "environment_variable",
      secret_name: "OPENAI_API_KEY",
      secret_value: "sk-x",
      networking: { type: "unrestricted" },
    },
  } as never);
  const file = await client.files.create({
    file: await toFile(new TextEncoder().encode("admin data"), "a.txt"),
    purpose: "user_data",
  });
  const environment = await client.beta.agents.environments.create({
    environment: { type: "openai_hosted" },
  });
  const template = await client.beta.agents.environments.templates.create({ name: "tpl" });
  const session = await client.beta.agents.sessions.create({
    environment: { type: "openai_hosted", environment_id: environment.id },
    agent: { model: "gpt-test" },
  });
  upstream.script.push({ output: [{ type: "message", text: "Done." }] });
  const turn = (await client.beta.agents.sessions.stream(session.id, { input: "Hi." })
    .finalResult()).turn;
  const automation = await client.beta.agents.automations.create({
    type: "periodic",
    name: "admin-automation",
    expression: "0 2 * * 1-5",
    timezone: "UTC",
    target: { type: "existing_session", session_id: session.id, instructions: "Go." },
  } as never);
  const response = await client.responses.create({ model: "gpt-test", input: "hi" });

  const routes: [string, string, string, unknown?][] = [
    ["GET", "/v1/agents/{id}", agent.id],
    ["POST", "/v1/agents/{id}", agent.id, { name: "stolen" }],
    ["DELETE", "/v1/agents/{id}", agent.id],
    ["GET", "/v1/vaults/{id}", vault.id],
    ["POST", "/v1/vaults/{id}", vault.id, { name: "stolen" }],
    ["DELETE", "/v1/vaults/{id}", vault.id],
    ["GET", "/v1/vaults/{id}/credentials", vault.id],
    ["GET", `/v1/vaults/{id}/credentials/${credential.id}`, vault.id],
    ["POST", `/v1/vaults/{id}/credentials/${credential.id}`, vault.id, { metadata: { a: "b" } }],
    ["DELETE", `/v1/vaults/{id}/credentials/${credential.id}`, vault.id],
    ["POST", "/v1/vaults/{id}/credentials", vault.id, {
      name: "planted",
      auth: {
        type: "environment_variable",
        secret_name: "X",
        secret_value: "y",
        networking: { type: "unrestricted" },
      },
    }],
    ["GET", "/v1/files/{id}", file.id],
    ["GET", "/v1/files/{id}/content", file.id],
    ["DELETE", "/v1/files/{id}", file.id],
    ["GET", "/v1/agents/environments/{id}", environment.id],
    ["GET", "/v1/agents/environments/{id}/files", environment.id],
    ["POST", "/v1/agents/environments/{id}/files", environment.id, {
      type: "inline",
      path: "/workspace/planted.txt",
      data: btoa("planted"),
    }],
    ["GET", "/v1/agents/environments/templates/{id}", template.id],
    ["POST", "/v1/agents/environments/templates/{id}", template.id, { name: "stolen" }],
    ["DELETE", "/v1/agents/environments/templates/{id}", template.id],
    ["GET", "/v1/agents/sessions/{id}", session.id],
    ["POST", "/v1/agents/sessions/{id}", session.id, { metadata: { a: "b" } }],
    ["DELETE", "/v1/agents/sessions/{id}", session.id],
    ["POST", "/v1/agents/sessions/{id}/events", session.id, {
      events: [{ type: "agent.session.input.cancel" }],
    }],
    ["GET", "/v1/agents/sessions/{id}/events", session.id],
    ["GET", "/v1/agents/sessions/{id}/items", session.id],
    ["GET", "/v1/agents/sessions/{id}/turns", session.id],
    ["GET", `/v1/agents/sessions/{id}/turns/${turn.id}`, session.id],
    ["GET", `/v1/agents/sessions/{id}/turns/${turn.id}/items`, session.id],
    ["GET", "/v1/agents/sessions/{id}/subagents", session.id],
    ["GET", "/v1/agents/sessions/{id}/traces", session.id],
    ["GET", "/v1/agents/sessions/{id}/artifacts", session.id],
    ["GET", "/v1/agents/automations/{id}", automation.id],
    ["POST", "/v1/agents/automations/{id}", automation.id, { name: "stolen" }],
    ["DELETE", "/v1/agents/automations/{id}", automation.id],
    ["POST", "/v1/agents/automations/{id}/pause", automation.id, {}],
    ["POST", "/v1/agents/automations/{id}/resume", automation.id, {}],
    ["POST", "/v1/agents/automations/{id}/invocations", automation.id, {}],
    ["GET", "/v1/agents/automations/{id}/invocations", automation.id],
    ["GET", "/v1/responses/{id}", response.id],
    ["GET", "/v1/responses/{id}/input_items", response.id],
    ["POST", "/v1/responses/{id}/cancel", response.id],
    ["DELETE", "/v1/responses/{id}", response.id],
  ];
  for (const token of [LOW, OTHER]) {
    for (const [method, path, id, body] of routes) {
      const theirs = await answer(url, token, method, path, id, body);
      const none = await answer(url, token, method, path, missing(id), body);
      assert.equal(theirs.status, 404, `${method} ${path}: ${theirs.text}`);
      assert.deepEqual(theirs, none, `${method} ${path}`);
    }
  }

  // Nothing of the operator's changed or went.
  assert.equal((await client.beta.agents.retrieve(agent.id)).name, "admin-agent");
  assert.equal((await client.beta.agents.vaults.retrieve(vault.id)).name, "admin-vault");
  assert.deepEqual(
    (await client.beta.agents.vaults.credentials.list(vault.id)).data.map((c) => c.name),
    ["key"],
  );
  assert.equal((await client.files.retrieve(file.id)).filename, "a.txt");
  assert.equal(
    await (await client.files.content(file.id)).text(),
    "admin data",
  );
  assert.deepEqual((await client.beta.agents.environments.retrieve(environment.id)).files, []);
  assert.equal(
    await exists(`${t.server.root}/agent-environments/${environment.id}/planted.txt`),
    false,
  );
  assert.equal((await client.beta.agents.environments.templates.retrieve(template.id)).name, "tpl");
  const kept = await client.beta.agents.sessions.retrieve(session.id);
  assert.deepEqual(kept.metadata, {});
  const auto = await client.beta.agents.automations.retrieve(automation.id);
  assert.equal(auto.name, "admin-automation");
  assert.equal(auto.status, "active");
  assert.deepEqual((await client.beta.agents.automations.invocations.list(automation.id)).data, []);
  assert.equal((await client.responses.retrieve(response.id)).id, response.id);
  // Only the operator's own model calls reached the upstream (none was low's or other's).
  assert.equal(upstream.requests.filter((r) => r.path.endsWith("/responses")).length, 2);
});

Deno.test("tenants: lists are filtered by owner; the operator sees every owner's; a cursor of another's is refused as unknown", async () => {
  await using t = await runtimeSetup({ policy: POLICY });
  const { client, server } = t;
  const as = (token: string) =>
    new OpenAI({ baseURL: `${server.url}/v1`, apiKey: token, maxRetries: 0 });
  const clients = { admin: client, low: as(LOW), other: as(OTHER) };
  const made: Record<string, Record<string, string>> = {};
  for (const [name, c] of Object.entries(clients)) {
    const environment = await c.beta.agents.environments.create({
      environment: { type: "openai_hosted" },
    });
    const session = await c.beta.agents.sessions.create({
      environment: { type: "openai_hosted", environment_id: environment.id },
      agent: { model: "gpt-test" },
    });
    made[name] = {
      agent: (await c.beta.agents.create({ model: "gpt-test", name })).id,
      vault: (await c.beta.agents.vaults.create({ name })).id,
      file: (await c.files.create({
        file: await toFile(new TextEncoder().encode(name), `${name}.txt`),
        purpose: "user_data",
      })).id,
      environment: environment.id,
      template: (await c.beta.agents.environments.templates.create({ name })).id,
      session: session.id,
      automation: (await c.beta.agents.automations.create({
        type: "periodic",
        name,
        expression: "0 2 * * 1-5",
        timezone: "UTC",
        target: { type: "existing_session", session_id: session.id, instructions: "Go." },
      } as never)).id,
    };
  }
  const lists = {
    agent: (c: OpenAI) => c.beta.agents.list({ limit: 100 }),
    vault: (c: OpenAI) => c.beta.agents.vaults.list({ limit: 100 }),
    file: (c: OpenAI) => c.files.list({ limit: 100 }),
    environment: (c: OpenAI) => c.beta.agents.environments.list({ limit: 100 }),
    template: (c: OpenAI) => c.beta.agents.environments.templates.list({ limit: 100 }),
    session: (c: OpenAI) => c.beta.agents.sessions.list({ limit: 100 }),
    automation: (c: OpenAI) => c.beta.agents.automations.list({ limit: 100 }),
  };
  for (const [kind, list] of Object.entries(lists)) {
    for (const name of ["low", "other"] as const) {
      const ids = (await list(clients[name])).data.map((o: { id: string }) => o.id);
      assert.deepEqual(ids, [made[name][kind]], `${name}'s ${kind} list`);
    }
    const all = (await list(client)).data.map((o: { id: string }) => o.id).sort();
    assert.deepEqual(
      all,
      [made.admin[kind], made.low[kind], made.other[kind]].sort(),
      `the operator's ${kind} list`,
    );
  }
  // Another's id as a cursor is refused as an unknown one is (400 naming after), not a page.
  const cursor = await rejection(() => clients.low.beta.agents.list({ after: made.other.agent }));
  assert.equal(cursor.status, 400);
  assert.equal((cursor.error as { param: string }).param, "after");
  // The operator touches another's: it may rename low's agent, and low sees the change.
  await client.beta.agents.update(made.low.agent, { name: "renamed" });
  assert.equal((await clients.low.beta.agents.retrieve(made.low.agent)).name, "renamed");
});

Deno.test("tenants: a session, environment or template uses only its owner's agents, vaults, files, environments and templates", async () => {
  await using t = await runtimeSetup({ policy: POLICY });
  const { client, server, upstream } = t;
  const low = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: LOW, maxRetries: 0 });
  // The operator's vault holds the key that pays for model calls.
  const vault = await client.beta.agents.vaults.create({ name: "paid" });
  await client.beta.agents.vaults.credentials.create(vault.id, {
    name: "key",
    auth: {
      type: "environment_variable",
      secret_name: "OPENAI_API_KEY",
      secret_value: upstream.apiKey,
      networking: { type: "unrestricted" },
    },
  } as never);
  const agent = await client.beta.agents.create({ model: "gpt-test", name: "admin" });
  const file = await client.files.create({
    file: await toFile(new TextEncoder().encode("secret notes"), "notes.txt"),
    purpose: "user_data",
  });
  const environment = await client.beta.agents.environments.create({
    environment: { type: "openai_hosted" },
  });
  const template = await client.beta.agents.environments.templates.create({
    name: "tpl",
    env: { TEMPLATE_SECRET: "tpl-secret-0123" },
  });
  const response = await client.responses.create({ model: "gpt-test", input: "hi" });

  const refusals: [string, () => Promise<unknown>][] = [
    ["vault_ids[0]", () =>
      low.beta.agents.sessions.create({
        environment: { type: "none" },
        agent: { model: "gpt-test" },
        vault_ids: [vault.id],
      } as never)],
    ["agent_id", () =>
      low.beta.agents.sessions.create({
        environment: { type: "none" },
        agent_id: agent.id,
      } as never)],
    ["environment.environment_id", () =>
      low.beta.agents.sessions.create({
        environment: { type: "openai_hosted", environment_id: environment.id },
        agent: { model: "gpt-test" },
      } as never)],
    ["environment.files[0].file_id", () =>
      low.beta.agents.environments.create({
        environment: {
          type: "openai_hosted",
          files: [{ type: "file_id", file_id: file.id, path: "/workspace/stolen.txt" }],
        },
      } as never)],
    ["environment.environment_template_id", () =>
      low.beta.agents.environments.create({
        environment: { type: "openai_hosted", environment_template_id: template.id },
      } as never)],
    ["vault_ids[0]", () =>
      low.beta.agents.environments.create({
        environment: { type: "openai_hosted" },
        vault_ids: [vault.id],
      } as never)],
    ["files[0].file_id", () =>
      low.beta.agents.environments.templates.create({
        name: "stolen",
        files: [{ type: "file_id", file_id: file.id, path: "/workspace/stolen.txt" }],
      } as never)],
    ["previous_response_id", () =>
      low.responses.create({
        model: "gpt-test",
        input: "continue",
        previous_response_id: response.id,
      })],
  ];
  const before = upstream.requests.length;
  for (const [param, call] of refusals) {
    const e = await rejection(call);
    assert.equal(e.status, 404, param);
    assert.equal((e.error as { param: string }).param, param);
  }
  // Nothing reached the upstream, and no environment of low's was made with the operator's file.
  assert.equal(upstream.requests.length, before);
  assert.deepEqual((await low.beta.agents.environments.list()).data, []);
  assert.deepEqual((await low.beta.agents.sessions.list()).data, []);

  // An automation is checked as its owner: low cannot target the operator's session.
  const session = await client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "gpt-test" },
  });
  const auto = await rejection(() =>
    low.beta.agents.automations.create({
      type: "periodic",
      name: "x",
      expression: "0 2 * * 1-5",
      timezone: "UTC",
      target: { type: "existing_session", session_id: session.id, instructions: "Go." },
    } as never)
  );
  assert.equal(auto.status, 404);
  assert.equal((auto.error as { param: string }).param, "target.session_id");
});

Deno.test("tenants: an automation runs as its owner, under the owner's policy", async () => {
  await using t = await runtimeSetup({ policy: POLICY });
  const { client, server, upstream } = t;
  const low = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: LOW, maxRetries: 0 });
  const workspace = await Deno.makeTempDir({ dir: server.root });
  const markerOf = (who: string) => `${workspace}/marker-${who}`;
  const target = (who: string) => ({
    type: "new_session",
    environment: { type: "openai_hosted" },
    agent: {
      model: "gpt-test",
      tools: [{
        type: "mcp",
        server_label: "planted",
        transport: {
          type: "stdio",
          command: "/bin/sh",
          args: ["-c", `touch ${markerOf(who)}`],
          cwd: "/workspace",
        },
      }],
    },
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Go." }] }],
  });
  for (const [who, c] of [["low", low], ["admin", client]] as const) {
    const automation = await c.beta.agents.automations.create({
      type: "periodic",
      name: who,
      expression: "0 2 * * 1-5",
      timezone: "UTC",
      target: target(who),
    } as never);
    upstream.script.push({ output: [{ type: "message", text: "Done." }] });
    const inv = await c.beta.agents.automations.invocations.create(automation.id, {} as never);
    let sessionId = (inv as { session_id?: string | null }).session_id ?? null;
    for (let i = 0; i < 100 && !sessionId; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const listed = await c.beta.agents.automations.invocations.list(automation.id);
      sessionId = (listed.data[0] as { session_id?: string | null }).session_id ?? null;
    }
    assert.ok(sessionId, `${who}'s invocation made no session`);
    // The session is the owner's: listed for it, not for the other tenant.
    assert.deepEqual(
      (await c.beta.agents.sessions.list()).data.map((s) => s.id).includes(sessionId),
      true,
    );
    for (let i = 0; i < 200; i++) {
      const s = await c.beta.agents.sessions.retrieve(sessionId);
      if (
        s.status === "idle" && (await c.beta.agents.sessions.turns.list(sessionId)).data.length > 0
      ) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  // low holds no process scope, so its stdio tool is refused; the operator's runs.
  assert.equal(await exists(markerOf("low")), false, "low's automation ran a command");
  assert.equal(await exists(markerOf("admin")), true, "the operator's automation did not run it");
  await Deno.remove(workspace, { recursive: true });
});
