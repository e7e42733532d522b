import assert from "node:assert/strict";
import { rejection } from "./helpers.ts";
import {
  automationsSetting,
  bareSession,
  delivered,
  invocationsOf,
  periodicIntoSession,
  seconds,
  text,
  turnsEnded,
} from "./automations_harness.ts";

const NOW = "2026-04-01T12:00:00Z";

Deno.test("automations: create, retrieve, update, list and delete; the target's secrets are never answered; Idempotency-Key", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start(NOW);
  const { client } = s;
  const body = {
    type: "periodic" as const,
    name: "nightly build",
    expression: "0 2 * * 1-5",
    timezone: "Europe/Paris",
    metadata: { team: "ci" },
    target: {
      type: "new_session" as const,
      environment: {
        type: "openai_hosted" as const,
        env: { DEPLOY_TOKEN: "tok-secret-4f1e" },
        files: [{ type: "inline" as const, path: "/workspace/a.txt", data: btoa("abc") }],
      },
      agent: { model: "gpt-test", instructions: "Build it." },
      input: [text("Run the nightly build.")],
    },
  };
  const created = await client.beta.agents.automations.create(body, {
    headers: { "Idempotency-Key": "k-1" },
  });
  const again = await client.beta.agents.automations.create(body, {
    headers: { "Idempotency-Key": "k-1" },
  });
  assert.equal(again.id, created.id);
  assert.match(created.id, /^automation_[0-9a-f]{48}$/);
  assert.equal(created.object, "agent.automation");
  assert.equal(created.status, "active");
  assert.deepEqual(created.created_by, { type: "developer" });
  assert.equal(created.created_at, seconds(NOW));
  assert.ok(!JSON.stringify(created).includes("tok-secret-4f1e"));
  assert.equal(created.target.type, "new_session");
  if (created.target.type === "new_session") {
    const env = created.target.environment;
    assert.equal(env.type, "openai_hosted");
    if (env.type === "openai_hosted") {
      assert.deepEqual(env.files, [{ type: "inline", path: "/workspace/a.txt", size_bytes: 3 }]);
    }
    assert.equal(created.target.agent?.model, "gpt-test");
    assert.equal(created.target.agent_id, null);
  }

  const updated = await client.beta.agents.automations.update(created.id, {
    name: "nightly build (weekdays)",
    expression: "30 2 * * 1-5",
    metadata: { team: "build" },
  });
  assert.equal(updated.name, "nightly build (weekdays)");
  assert.equal(updated.type === "periodic" && updated.expression, "30 2 * * 1-5");
  assert.deepEqual(updated.metadata, { team: "build" });
  assert.equal((await client.beta.agents.automations.retrieve(created.id)).name, updated.name);

  const second = await client.beta.agents.automations.create({ ...body, name: "second" });
  const ids = [];
  for await (const a of client.beta.agents.automations.list({ limit: 1 })) ids.push(a.id);
  assert.deepEqual(ids, [second.id, created.id]);

  const deleted = await client.beta.agents.automations.delete(created.id);
  assert.deepEqual(deleted, { id: created.id, deleted: true, object: "agent.automation.deleted" });
  const gone = await rejection(() => client.beta.agents.automations.retrieve(created.id));
  assert.equal(gone.status, 404);
  assert.equal(gone.param, "automation_id");
});

Deno.test("automations: bad schedules and targets are refused, naming the field", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start(NOW);
  const { client } = s;
  const target = {
    type: "new_session" as const,
    environment: { type: "none" as const },
    agent: { model: "gpt-test" },
    input: [text("hi")],
  };
  const periodic = (over: Record<string, unknown>) =>
    rejection(() =>
      client.beta.agents.automations.create({
        type: "periodic",
        name: "x",
        expression: "0 9 * * *",
        timezone: "UTC",
        target,
        ...over,
      } as never)
    );
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ expression: "0 9 * *" }, "expression", /5 space-separated fields/],
    [{ expression: "0 0 9 * * *" }, "expression", /5 space-separated fields/],
    [{ expression: "@daily" }, "expression", /5 space-separated fields/],
    [{ expression: "61 * * * *" }, "expression", /minute/],
    [{ expression: "0 0 31 2 *" }, "expression", /matches no date/],
    [{ timezone: "Europe/Berln" }, "timezone", /nearest is 'Europe\/Berlin'/],
    [{ timezone: "+02:00" }, "timezone", /not an IANA time zone/],
    [{ colour: "red" }, "colour", /Unknown parameter/],
    [{ target: { ...target, agent: undefined } }, "target.agent", /exactly one/],
    [{ target: { ...target, agent_id: "agent_x" } }, "target.agent", /exactly one/],
    [
      { target: { ...target, environment: { type: "openai_hosted", env: { PATH: "/x" } } } },
      "target.environment.env.PATH",
      /PATH/,
    ],
    [{ target: { ...target, vault_ids: ["vault_nope"] } }, "target.vault_ids[0]", /vault/],
    [
      { target: { type: "existing_session", session_id: "sess_nope", instructions: "x" } },
      "target.session_id",
      /sess_nope/,
    ],
  ];
  for (const [over, param, message] of cases) {
    const e = await periodic(over);
    assert.equal(e.param, param, JSON.stringify(over));
    assert.match(String(e.message), message, JSON.stringify(over));
    assert.ok([400, 403, 404].includes(e.status as number), `${param}: ${e.status}`);
  }
  const past = await rejection(() =>
    client.beta.agents.automations.create({
      type: "once",
      name: "late",
      run_at: seconds(NOW) - 1,
      target,
    })
  );
  assert.equal(past.param, "run_at");
  assert.match(String(past.message), /not in the future/);
  const none = [];
  for await (const a of client.beta.agents.automations.list()) none.push(a);
  assert.deepEqual(none, [], "nothing refused was kept");

  const once = await client.beta.agents.automations.create({
    type: "once",
    name: "soon",
    run_at: seconds(NOW) + 60,
    target,
  });
  const expr = await rejection(() =>
    client.beta.agents.automations.update(once.id, { expression: "0 * * * *" })
  );
  assert.equal(expr.param, "expression");
  const retype = await rejection(() =>
    client.beta.agents.automations.update(once.id, {
      target: { type: "existing_session", session_id: "sess_x", instructions: "x" },
    })
  );
  assert.equal(retype.param, "target.type");
});

Deno.test("automations: a manual invocation is delivered at once without changing the schedule; a busy target session gives skipped (pending_delivery)", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start(NOW);
  const { client } = s;
  const { upstream } = setting;
  const { session, automation } = await periodicIntoSession(client, {
    name: "weekly",
    expression: "0 9 * * 1",
    timezone: "UTC",
    instructions: "Weekly review.",
  });

  // A turn is running (its model call held): the manual run is skipped, the turn untouched.
  const gate = Promise.withResolvers<void>();
  upstream.script.push({ output: [{ type: "message", text: "first" }], gate: gate.promise });
  await client.beta.agents.sessions.events.create(session.id, {
    events: [{ type: "agent.session.input.message", input: [text("Working on it?")] }],
  });
  await upstream.modelCall(1);
  const skipped = await client.beta.agents.automations.invocations.create(automation.id);
  assert.equal(skipped.status, "skipped");
  assert.equal(skipped.skip_reason, "pending_delivery");
  assert.equal(skipped.session_id, session.id);
  assert.deepEqual(skipped.source, { type: "manual" });
  assert.equal(skipped.scheduled_at, null);
  gate.resolve();
  await turnsEnded(client, session.id, 1);

  // Idle: delivered as a new turn whose user message is the instructions.
  upstream.script.push({ output: [{ type: "message", text: "reviewed" }] });
  const run = await client.beta.agents.automations.invocations.create(automation.id, {
    headers: { "Idempotency-Key": "manual-1" },
  });
  const replay = await client.beta.agents.automations.invocations.create(automation.id, {
    headers: { "Idempotency-Key": "manual-1" },
  });
  assert.equal(replay.id, run.id);
  assert.equal(run.status, "completed");
  assert.equal(run.session_id, session.id);
  const turns = await turnsEnded(client, session.id, 2);
  assert.equal(turns[1].status, "completed");
  assert.match(JSON.stringify((await upstream.modelCall(2)).input), /Weekly review\./);

  const got = await client.beta.agents.automations.invocations.retrieve(run.id, {
    automation_id: automation.id,
  });
  assert.deepEqual(got, run);
  assert.deepEqual((await invocationsOf(client, automation.id)).map((i) => i.id), [
    skipped.id,
    run.id,
  ]);
  const other = await client.beta.agents.automations.create({
    type: "once",
    name: "other",
    run_at: seconds(NOW) + 3600,
    target: { type: "existing_session", session_id: session.id, instructions: "x" },
  });
  const wrong = await rejection(() =>
    client.beta.agents.automations.invocations.retrieve(run.id, { automation_id: other.id })
  );
  assert.equal(wrong.status, 404);
  assert.equal(wrong.param, "invocation_id");
  await client.beta.agents.automations.delete(other.id);
  // The schedule did not move: nothing fired, and the next Monday 09:00 still fires.
  upstream.script.push({ output: [{ type: "message", text: "monday" }] });
  s.moveTo("2026-04-06T09:00:00Z");
  const all = await delivered(client, automation.id, 3);
  assert.equal(all[2].scheduled_at, seconds("2026-04-06T09:00:00Z"));
  assert.equal(all[2].status, "completed");
  await turnsEnded(client, session.id, 3);
});

Deno.test("automations: a deleted target session fails the invocation with the reason; the 10 endpoints are on", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start(NOW);
  const { client, server } = s;
  const session = await bareSession(client);
  const automation = await client.beta.agents.automations.create({
    type: "once",
    name: "gone",
    run_at: seconds(NOW) + 60,
    target: { type: "existing_session", session_id: session.id, instructions: "x" },
  });
  await client.beta.agents.sessions.delete(session.id);
  const inv = await client.beta.agents.automations.invocations.create(automation.id);
  assert.equal(inv.status, "failed");
  assert.equal(inv.error?.code, "session_not_found");
  assert.match(inv.error!.message, new RegExp(session.id));

  const caps = await (await fetch(`${server.url}/capabilities`, {
    headers: { authorization: `Bearer ${server.token}` },
  })).json();
  const ids = Object.keys(caps.endpoints).filter((k) => k.startsWith("agents_automations_"));
  assert.equal(ids.length, 10);
  for (const id of ids) assert.equal(caps.endpoints[id].enabled, true, id);
});
