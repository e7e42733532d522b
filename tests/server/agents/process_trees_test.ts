/**
 * Nothing a turn's `shell` command starts outlives the turn: processes that left its process
 * group (`setsid`, a double fork, `disown`, a job under `set -m`) end when the turn is cancelled,
 * and when the command ends by itself. Judged by the processes, found by a number unique to
 * each in their command line.
 */

import assert from "node:assert/strict";
import { type RuntimeSetup, runtimeSetup } from "./runtime_helpers.ts";
import { eventually } from "../../helpers/wait.ts";

/** Live (not zombie) processes whose command line holds `marker`. */
async function withCmdline(marker: string): Promise<number[]> {
  const out: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = await Deno.readTextFile(`/proc/${e.name}/cmdline`);
      const stat = await Deno.readTextFile(`/proc/${e.name}/stat`);
      const state = stat.slice(stat.lastIndexOf(")") + 2)[0];
      if (cmd.includes(marker) && !cmd.includes("deno") && state !== "Z") {
        out.push(Number(e.name));
      }
    } catch { /* gone */ }
  }
  return out;
}

/** The four escapes, each a `sleep` of a duration no other process has. */
function escapes(): { cmd: string; markers: string[] } {
  const base = 5000 + Math.floor(Math.random() * 4000);
  const markers = [1, 2, 3, 4].map((i) => `${base}.${i}${i}7`);
  const sleeper = (m: string) => `sleep ${m} >/dev/null 2>&1 </dev/null`;
  const cmd = `setsid ${sleeper(markers[0])} & ( ${sleeper(markers[1])} & ) ; ` +
    `${sleeper(markers[2])} & disown; set -m; ${sleeper(markers[3])} & set +m; `;
  return { cmd, markers };
}

/**
 * A session whose model's next answer is a `shell` call that starts the four escapes and then
 * runs `then`; the session and the escapes' markers.
 */
async function shellCallWithEscapes(
  t: RuntimeSetup,
  then: string,
): Promise<{ sessionId: string; markers: string[] }> {
  const { sessionId } = await t.session();
  const { cmd, markers } = escapes();
  t.upstream.script.push({
    output: [{ type: "function_call", name: "shell", arguments: { command: `${cmd} ${then}` } }],
  });
  return { sessionId, markers };
}

async function gone(markers: string[]): Promise<void> {
  try {
    await eventually("every escaped process ended", async () => {
      for (const m of markers) if ((await withCmdline(m)).length > 0) return false;
      return true;
    }, 5000);
  } finally {
    for (const m of markers) for (const p of await withCmdline(m)) Deno.kill(p, "SIGKILL");
  }
}

Deno.test("agents: a cancelled turn ends what its command started, setsid and all", async () => {
  await using t = await runtimeSetup();
  const { client } = t;
  const { sessionId, markers } = await shellCallWithEscapes(t, "sleep 0.3; echo started; sleep 60");
  const stream = client.beta.agents.sessions.stream(sessionId, { input: "Wait." });
  const types: string[] = [];
  let cancelled = false;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "agent.output.command_execution_output.delta" && !cancelled) {
      cancelled = true;
      for (const m of markers) assert.equal((await withCmdline(m)).length, 1, `${m} runs`);
      await client.beta.agents.sessions.events.create(sessionId, {
        events: [{ type: "agent.session.input.cancel" }],
      });
    }
  }
  assert.ok(cancelled, types.join(" "));
  assert.deepEqual(types.slice(-2), ["agent.session.turn.cancelled", "agent.session.idle"]);
  await gone(markers);
});

Deno.test("agents: a turn's command that ends leaves nothing running", async () => {
  await using t = await runtimeSetup();
  const { client } = t;
  const { sessionId, markers } = await shellCallWithEscapes(t, "sleep 0.3; echo done");
  t.upstream.script.push({ output: [{ type: "message", text: "Done." }] });
  const result = await client.beta.agents.sessions.stream(sessionId, { input: "Go." })
    .finalResult();
  assert.equal(result.turn.status, "completed");
  await gone(markers);
  const deleted = await client.beta.agents.sessions.delete(sessionId);
  assert.equal(deleted.deleted, true);
});
