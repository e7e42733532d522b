/**
 * The open-policy check: with the `open` preset, `GET /capabilities` shows every agents
 * endpoint enabled, with no `code:` rule: all 70 are built.
 */

import assert from "node:assert/strict";
import { ENDPOINTS } from "../../../server/endpoints.ts";
import { startAgentsServer } from "./helpers.ts";

Deno.test("open policy: GET /capabilities shows all 70 agents endpoints enabled, with no code: rule", async () => {
  await using server = await startAgentsServer({ policy: { preset: "open" } });
  const caps = await (await server.fetch("/capabilities")).json();
  const agents = ENDPOINTS.filter((e) => e.group === "agents").map((e) => e.id);
  assert.equal(agents.length, 70);
  const off = agents.filter((id) => {
    const e = caps.endpoints[id];
    return !e.enabled || (e.rule ?? "").startsWith("code:");
  });
  assert.deepEqual(off, []);
  for (const id of agents) {
    assert.equal(caps.endpoints[id].enabled, true, id);
    assert.equal(caps.endpoints[id].allowed, true, id);
  }
});
