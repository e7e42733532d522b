/**
 * ENDPOINT_METHODS and the client's ROUTES against the server's real endpoint table.
 */

import assert from "node:assert/strict";
import { ENDPOINTS } from "../../server/endpoints.ts";
import { ENDPOINT_METHODS, ServerClient } from "../../sdk/mod.ts";
import { ROUTES } from "../../sdk/client/routes.ts";
import { startTestServer } from "../helpers/server.ts";

function resolve(root: unknown, dotted: string): unknown {
  let node = root as Record<string, unknown> | undefined;
  const parts = dotted.split(".");
  for (const part of parts.slice(0, -1)) node = node?.[part] as Record<string, unknown>;
  return node?.[parts[parts.length - 1]];
}

Deno.test("every endpoint id of the server's table is in ENDPOINT_METHODS, and nothing else", () => {
  const ids: string[] = ENDPOINTS.map((e) => e.id);
  assert.equal(ids.length, 118);
  const missing = ids.filter((id) => !Object.hasOwn(ENDPOINT_METHODS, id));
  assert.deepEqual(missing, [], `not covered: ${missing.join(", ")}`);
  const extra = Object.keys(ENDPOINT_METHODS).filter((id) => !ids.includes(id));
  assert.deepEqual(extra, [], `not in the server's table: ${extra.join(", ")}`);
  for (const [id, methods] of Object.entries(ENDPOINT_METHODS)) {
    assert.ok(methods.length > 0, `${id} maps to no method`);
  }
});

Deno.test("the client's routes are the server's, row by row", () => {
  assert.equal(Object.keys(ROUTES).length, ENDPOINTS.length);
  for (const e of ENDPOINTS) assert.equal(ROUTES[e.id], `${e.method} ${e.path}`, e.id);
});

Deno.test("every method ENDPOINT_METHODS names exists on a real, discovered client", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  await client.discover();
  const absent: string[] = [];
  for (const [id, methods] of Object.entries(ENDPOINT_METHODS)) {
    for (const m of methods) {
      if (typeof resolve(client, m) !== "function") absent.push(`${id} → ${m}`);
    }
  }
  assert.deepEqual(absent, []);
});
