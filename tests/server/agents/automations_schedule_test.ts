import assert from "node:assert/strict";
import {
  automationsSetting,
  delivered,
  invocationsOf,
  periodicIntoSession,
  seconds,
  text,
  turnsEnded,
} from "./automations_harness.ts";

Deno.test("automations: a once automation fires at run_at, creates its session whose turn runs through the upstream, and ends completed", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start("2026-05-01T09:00:00Z");
  const { client } = s;
  setting.upstream.script.push({ output: [{ type: "message", text: "Report sent." }] });
  const automation = await client.beta.agents.automations.create({
    type: "once",
    name: "morning report",
    run_at: seconds("2026-05-01T09:30:00Z"),
    target: {
      type: "new_session",
      environment: { type: "none" },
      agent: { model: "gpt-test", instructions: "Be brief." },
      input: [text("Send the morning report.")],
      metadata: { origin: "automation" },
    },
  });
  assert.equal(automation.status, "active");
  assert.equal(automation.type, "once");

  s.moveTo("2026-05-01T09:29:59.999Z");
  assert.deepEqual(await invocationsOf(client, automation.id), []);
  s.moveTo("2026-05-01T09:30:00Z");
  const [inv] = await delivered(client, automation.id, 1);
  assert.equal(inv.status, "completed");
  assert.equal(inv.scheduled_at, seconds("2026-05-01T09:30:00Z"));
  assert.equal(inv.source.type, "automation");
  assert.equal(inv.skip_reason, null);
  assert.ok(inv.session_id);

  const session = await client.beta.agents.sessions.retrieve(inv.session_id);
  assert.deepEqual(session.metadata, { origin: "automation" });
  const [turn] = await turnsEnded(client, session.id, 1);
  assert.equal(turn.status, "completed");
  const call = await setting.upstream.modelCall(1);
  assert.match(JSON.stringify(call.input), /Send the morning report\./);
  const items = [];
  for await (const i of client.beta.agents.sessions.items.list(session.id, { order: "asc" })) {
    items.push(i);
  }
  assert.deepEqual(
    items.map((i) => i.type === "message" ? i.content.map((c) => "text" in c ? c.text : "") : []),
    [["Send the morning report."], ["Report sent."]],
  );

  const after = await client.beta.agents.automations.retrieve(automation.id);
  assert.equal(after.status, "completed");
  // Nothing more fires, however far the clock goes.
  s.moveTo("2026-06-01T00:00:00Z");
  assert.equal((await invocationsOf(client, automation.id)).length, 1);
});

Deno.test("automations: a periodic automation in Europe/Berlin fires at 09:00 local time across the switch to summer time (08:00 UTC, then 07:00 UTC)", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start("2026-03-27T12:00:00Z");
  const { client } = s;
  const automation = await client.beta.agents.automations.create({
    type: "periodic",
    name: "daily standup",
    expression: "0 9 * * *",
    timezone: "Europe/Berlin",
    target: {
      type: "new_session",
      environment: { type: "none" },
      agent: { model: "gpt-test" },
      input: [text("Standup notes, please.")],
    },
  });
  assert.equal(automation.type, "periodic");
  // 28 March is winter time (UTC+1); summer time starts at 02:00 on 29 March (UTC+2).
  const expected = [
    "2026-03-28T08:00:00.000Z",
    "2026-03-29T07:00:00.000Z",
    "2026-03-30T07:00:00.000Z",
  ];
  for (const [n, at] of expected.entries()) {
    setting.upstream.script.push({ output: [{ type: "message", text: `notes ${n}` }] });
    s.moveTo(new Date(Date.parse(at) - 1).toISOString());
    assert.equal((await invocationsOf(client, automation.id)).length, n, `none yet before ${at}`);
    s.moveTo(at);
    const all = await delivered(client, automation.id, n + 1);
    assert.equal(all[n].status, "completed");
    await turnsEnded(client, all[n].session_id!, 1);
  }
  const all = await invocationsOf(client, automation.id);
  assert.deepEqual(all.map((i) => new Date(i.scheduled_at! * 1000).toISOString()), expected);
  assert.equal(new Set(all.map((i) => i.session_id)).size, 3, "a new session per firing");
});

Deno.test("automations: a job at 02:00 and 03:00 in America/New_York skips the 02:00 the spring change removes (2026-03-08)", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start("2026-03-07T07:30:00Z"); // 02:30 EST
  const { client } = s;
  const { session, automation } = await periodicIntoSession(client, {
    name: "night checks",
    expression: "0 2,3 * * *",
    timezone: "America/New_York",
    instructions: "Check in.",
  });
  const [sessionId, automationId] = [session.id, automation.id];
  // 03:00 EST (UTC-5); on the 8th 01:59:59 EST is followed by 03:00 EDT (UTC-4), so 02:00
  // does not occur that day; from the 9th both run in EDT.
  const expected = [
    "2026-03-07T08:00:00.000Z",
    "2026-03-08T07:00:00.000Z",
    "2026-03-09T06:00:00.000Z",
    "2026-03-09T07:00:00.000Z",
  ];
  for (const [n, at] of expected.entries()) {
    setting.upstream.script.push({ output: [{ type: "message", text: `ok ${n}` }] });
    s.moveTo(at);
    await delivered(client, automationId, n + 1);
    await turnsEnded(client, sessionId, n + 1);
  }
  const all = await invocationsOf(client, automationId);
  assert.deepEqual(all.map((i) => new Date(i.scheduled_at! * 1000).toISOString()), expected);
  assert.ok(all.every((i) => i.status === "completed" && i.session_id === sessionId));
});

Deno.test("automations: pause stops firings (none while paused); resume fires again from the next due time", async () => {
  await using setting = await automationsSetting();
  await using s = await setting.start("2026-07-01T10:30:00Z");
  const { client } = s;
  const { session, automation } = await periodicIntoSession(client, {
    name: "hourly",
    expression: "0 * * * *",
    timezone: "UTC",
    instructions: "Tick.",
  });
  const paused = await client.beta.agents.automations.pause(automation.id);
  assert.equal(paused.status, "paused");
  s.moveTo("2026-07-01T14:30:00Z");
  assert.deepEqual(await invocationsOf(client, automation.id), []);

  const resumed = await client.beta.agents.automations.resume(automation.id);
  assert.equal(resumed.status, "active");
  setting.upstream.script.push({ output: [{ type: "message", text: "tock" }] });
  s.moveTo("2026-07-01T15:00:00Z");
  const [inv] = await delivered(client, automation.id, 1);
  assert.equal(inv.status, "completed");
  assert.equal(inv.scheduled_at, seconds("2026-07-01T15:00:00Z"));
  await turnsEnded(client, session.id, 1);
  const listed = [];
  for await (const a of client.beta.agents.automations.list({ session_id: session.id })) {
    listed.push(a.id);
  }
  assert.deepEqual(listed, [automation.id]);
});
