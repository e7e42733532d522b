// A terminal deleted the moment it is created still ends: its shell may not have made its
// session yet, so the hang-up must reach it through its own handle.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

function childrenOf(pid: number): number[] {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/task/${pid}/children`).trim().split(/\s+/)
      .filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

Deno.test("create then delete at once, many at a time: every delete ends its shell", async () => {
  await using server = await startTestServer();
  const cycle = async () => {
    // A hang here is the bug; the deadline turns it into a failure instead of a stuck suite.
    const signal = AbortSignal.timeout(30_000);
    const created = await server.fetch("/pty", {
      method: "POST",
      body: JSON.stringify({ shell: "/bin/bash", args: ["--norc", "--noprofile"] }),
      signal,
    });
    assert.equal(created.status, 201, await created.clone().text());
    const { id } = await created.json();
    const deleted = await server.fetch(`/pty/${id}`, { method: "DELETE", signal });
    assert.equal(deleted.status, 200, await deleted.clone().text());
    const body = await deleted.json();
    assert.notEqual(body.status, "running");
  };
  for (let round = 0; round < 10; round++) await Promise.all(Array.from({ length: 8 }, cycle));
  const list = await (await server.fetch("/pty")).json();
  assert.ok(list.terminals.every((t: { status: string }) => t.status !== "running"));
  const serverPid = childrenOf(server.pid)[0];
  assert.deepEqual(childrenOf(serverPid), [], "a shell outlived its terminal");
});
