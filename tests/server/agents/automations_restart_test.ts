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

Deno.test("automations: firings missed while the server was stopped: the latest runs once, the earlier are skipped (missed); a once automation due meanwhile runs at start and completes", async () => {
  await using setting = await automationsSetting();
  const target = {
    type: "new_session" as const,
    environment: { type: "none" as const },
    agent: { model: "gpt-test" },
    input: [text("Hourly digest.")],
  };
  let hourlyId: string;
  let onceId: string;
  {
    await using first = await setting.start("2026-09-10T10:30:00Z");
    const hourly = await first.client.beta.agents.automations.create({
      type: "periodic",
      name: "hourly digest",
      expression: "0 * * * *",
      timezone: "UTC",
      target,
    });
    const once = await first.client.beta.agents.automations.create({
      type: "once",
      name: "one reminder",
      run_at: seconds("2026-09-10T11:15:00Z"),
      target: { ...target, input: [text("The reminder.")] },
    });
    hourlyId = hourly.id;
    onceId = once.id;
  }
  // Stopped across 11:00, 11:15 and 12:00; started again at 12:30.
  setting.upstream.script.push(
    { output: [{ type: "message", text: "digest" }] },
    { output: [{ type: "message", text: "reminded" }] },
  );
  await using second = await setting.start("2026-09-10T12:30:00Z");
  const { client } = second;
  const hourly = await delivered(client, hourlyId, 2);
  assert.deepEqual(
    hourly.map((i) => [i.scheduled_at, i.status, i.skip_reason]),
    [
      [seconds("2026-09-10T11:00:00Z"), "skipped", "missed"],
      [seconds("2026-09-10T12:00:00Z"), "completed", null],
    ],
  );
  assert.equal(hourly[0].session_id, null);
  await turnsEnded(client, hourly[1].session_id!, 1);

  const [reminder] = await delivered(client, onceId, 1);
  assert.equal(reminder.status, "completed");
  assert.equal(reminder.scheduled_at, seconds("2026-09-10T11:15:00Z"));
  await turnsEnded(client, reminder.session_id!, 1);
  assert.equal((await client.beta.agents.automations.retrieve(onceId)).status, "completed");

  // The schedule goes on from there.
  setting.upstream.script.push({ output: [{ type: "message", text: "digest" }] });
  second.moveTo("2026-09-10T13:00:00Z");
  const after = await delivered(client, hourlyId, 3);
  assert.deepEqual(after[2].scheduled_at, seconds("2026-09-10T13:00:00Z"));
  assert.equal(after[2].status, "completed");
  await turnsEnded(client, after[2].session_id!, 1);
  assert.equal((await invocationsOf(client, onceId)).length, 1);
});

Deno.test("automations: a paused automation stays paused across a restart and records no missed firings", async () => {
  await using setting = await automationsSetting();
  let id: string;
  {
    await using first = await setting.start("2026-09-10T10:30:00Z");
    const { automation: a } = await periodicIntoSession(first.client, {
      name: "paused",
      expression: "*/5 * * * *",
      timezone: "UTC",
      instructions: "Ping.",
    });
    await first.client.beta.agents.automations.pause(a.id);
    id = a.id;
  }
  await using second = await setting.start("2026-09-11T10:30:00Z");
  assert.equal((await second.client.beta.agents.automations.retrieve(id)).status, "paused");
  assert.deepEqual(await invocationsOf(second.client, id), []);
});
