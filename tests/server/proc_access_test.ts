/**
 * How the server's processes see `/proc` (`SANDBAR_PROC`), and the server's own environment
 * block: the tokens it started with are wiped from what the kernel shows, not only unset.
 */

import assert from "node:assert/strict";
import { serverPid } from "../helpers/proc.ts";
import { startTestServer } from "../helpers/server.ts";

const AGENT_TOKEN = "agent-token-from-env-0123456789abcdef";

Deno.test("the server wipes its tokens from the environment block /proc shows", async () => {
  await using server = await startTestServer({
    policy: {
      identities: [{ id: "agent", token_env: "AGENT_TOKEN_VAR", scopes: ["process:run"] }],
    },
    env: { AGENT_TOKEN_VAR: AGENT_TOKEN, AGENT_TOKEN_COPY: AGENT_TOKEN },
  });
  // Read as this test (root on the host) reads it: what any same-user process would see.
  const environ = Deno.readTextFileSync(`/proc/${serverPid(server)}/environ`);
  assert.match(environ, /SANDBAR_STATE_DIR=/, "the block was read");
  assert.ok(!environ.includes(server.token), "the server token is in the block");
  assert.ok(!environ.includes(AGENT_TOKEN), "the identity's token is in the block");
  assert.ok(!environ.includes("AGENT_TOKEN_VAR="));
  // The identity still authenticates: the token was read before it was wiped.
  const res = await server.post("/process/shell", { cmd: "echo ok" }, { token: AGENT_TOKEN });
  assert.equal((await res.json()).stdout, "ok\n");
});

Deno.test("/proc: closed to processes by default, open with SANDBAR_PROC=open", async () => {
  const probe = "cat /proc/self/status >/dev/null && echo status; ls /proc | grep -c '^[0-9]'";
  {
    await using server = await startTestServer();
    const body = await (await server.post("/process/shell", { cmd: probe })).json();
    assert.doesNotMatch(body.stdout, /status/);
    assert.match(body.stderr, /Permission denied/);
  }
  {
    await using server = await startTestServer({ env: { SANDBAR_PROC: "open" } });
    const body = await (await server.post("/process/shell", { cmd: probe })).json();
    assert.match(body.stdout, /^status\n[1-9]\d*\n$/);
  }
});

Deno.test("an unknown SANDBAR_PROC stops the server, naming the valid values", async () => {
  await assert.rejects(
    () => startTestServer({ env: { SANDBAR_PROC: "visible" } }),
    /SANDBAR_PROC must be one of "closed", "open", not "visible"/,
  );
});
