/**
 * The open-policy check: with the `open` preset, `GET /capabilities` shows every agents
 * endpoint enabled, with no `code:` rule, except those still unbuilt (named here, so that
 * building one fails this test until it is taken off the list).
 */

import assert from "node:assert/strict";
import { ENDPOINTS } from "../../../server/endpoints.ts";
import { startAgentsServer } from "./helpers.ts";

/** Agents endpoints without a handler yet. */
const UNBUILT = [
  "agents_automations_create",
  "agents_automations_delete",
  "agents_automations_invocations_create",
  "agents_automations_invocations_list",
  "agents_automations_invocations_retrieve",
  "agents_automations_list",
  "agents_automations_pause",
  "agents_automations_resume",
  "agents_automations_retrieve",
  "agents_automations_update",
];

Deno.test("open policy: GET /capabilities shows every built agents endpoint enabled, with no code: rule", async () => {
  await using server = await startAgentsServer({ policy: { preset: "open" } });
  const caps = await (await server.fetch("/capabilities")).json();
  const agents = ENDPOINTS.filter((e) => e.group === "agents").map((e) => e.id);
  assert.equal(agents.length, 70);
  const off = agents.filter((id) => {
    const e = caps.endpoints[id];
    return !e.enabled || (e.rule ?? "").startsWith("code:");
  });
  assert.deepEqual(off.sort(), UNBUILT);
  for (const id of UNBUILT) {
    assert.equal(caps.endpoints[id].rule, "code:unimplemented:agents", id);
  }
  for (const id of agents.filter((id) => !UNBUILT.includes(id))) {
    assert.equal(caps.endpoints[id].enabled, true, id);
    assert.equal(caps.endpoints[id].allowed, true, id);
  }
});
