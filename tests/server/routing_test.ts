// Routing: every path of the endpoint table reaches its own endpoint id (static segments win over
// parameters: `/v1/agents/sessions` is not an agent id), on its own port.
import assert from "node:assert/strict";
import { ENDPOINTS } from "../../server/endpoints.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("every endpoint's path reaches that endpoint", async () => {
  const server = await startTestServer({ policy: { audit: "all" } });
  const pty = server.ptyUrl.replace("ws:", "http:");
  try {
    for (const e of ENDPOINTS) {
      const path = e.path.replace(/:[a-z_]+/g, (m) => `x_${m.slice(1)}_1`);
      // Without a token: refused at authentication, after matching, so nothing runs.
      const res = await fetch(`${e.port === "pty" ? pty : server.url}${path}`, {
        method: e.method,
      });
      assert.equal(res.status, e.public ? 200 : 401, `${e.id} ${e.method} ${path}`);
      await res.body?.cancel();
    }
  } finally {
    await server.close();
  }
  const audited = server.stderr().split("\n").filter((l) => l.startsWith('{"time"'))
    .map((l) => JSON.parse(l).endpoint);
  assert.deepEqual(audited, ENDPOINTS.map((e) => e.id));
});
