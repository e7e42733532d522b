/**
 * Nothing outlives its owner: processes that left their process group (`setsid`, a double fork,
 * `disown`, a job in a group of its own under `set -m`) end when the command ends, when a
 * background process is killed, when a code context is removed, and when the server stops.
 * Judged by the pid each wrote: the process is gone. Run in each way the server ends trees,
 * forced with `SANDBAR_PROCESS_TREES`: cgroups of the v2 hierarchy (`cgroup.kill`; here the
 * hybrid mount at `/sys/fs/cgroup/unified`), freezer cgroups of the v1 hierarchy, and the session
 * fallback (what a local sandbox gets), where a process that called `setsid` is found only while
 * its parent lives. A cgroup way is ignored where its hierarchy is not found or not writable.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { ownTreeCgroup } from "../../server/process/tree_cgroups.ts";

/** Whether this host has the hierarchy (found as the server finds it) and this user may write. */
const hasV1 = "dir" in ownTreeCgroup(1);
const hasV2 = "dir" in ownTreeCgroup(2);

/** The escapes, each writing its pid to `<dir>/<name>.pid` and then sleeping. */
function escapes(dir: string, names: readonly string[]): string {
  const sleeper = (name: string) =>
    `sh -c 'echo $$ > ${join(dir, name)}.pid; exec sleep 300' >/dev/null 2>&1 </dev/null`;
  const forms: Record<string, string> = {
    setsid: `setsid ${sleeper("setsid")} &`,
    double: `( ${sleeper("double")} & ) ;`,
    disown: `${sleeper("disown")} & disown;`,
    pgrp: `set -m; ${sleeper("pgrp")} & set +m;`,
  };
  return names.map((n) => forms[n]).join(" ");
}

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function pids(
  dir: string,
  names: readonly string[],
  running = true,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const n of names) {
    out[n] = await eventually(`${n} wrote its pid`, async () => {
      const text = await Deno.readTextFile(join(dir, `${n}.pid`)).catch(() => "");
      return text.trim() ? Number(text) : null;
    });
    if (running) assert.ok(alive(out[n]), `${n} is running before the end`);
  }
  return out;
}

async function allGone(what: string, found: Record<string, number>): Promise<void> {
  try {
    await eventually(`every process of ${what} ended`, () => {
      return Object.values(found).every((p) => !alive(p));
    }, 5000);
  } finally {
    // Never leave one behind, whatever the assertion said.
    for (const p of Object.values(found)) if (alive(p)) Deno.kill(p, "SIGKILL");
  }
}

async function json(res: Response) {
  const body = await res.json();
  assert.ok(res.ok, JSON.stringify(body));
  return body;
}

/** The line of `/proc/<pid>/cgroup` that holds a tree's cgroup in each way, or null. */
const TREE_LINE: Record<string, RegExp | null> = {
  cgroup2: /^0::.*\/sandbar-\d+\/t\d+-[0-9a-f]+$/m,
  cgroup1: /^\d+:[^:]*\bfreezer\b[^:]*:.*\/sandbar-\d+\/t\d+-[0-9a-f]+$/m,
  session: null,
};

async function cases(t: Deno.TestContext, env: Record<string, string>, all: boolean) {
  const treeLine = TREE_LINE[env.SANDBAR_PROCESS_TREES];
  // The session fallback cannot find a `setsid` process whose parent already exited.
  const orphaned = all ? ["setsid", "double", "disown", "pgrp"] : ["double", "disown", "pgrp"];
  const attached = ["setsid", "double", "disown", "pgrp"];
  await using server = await startTestServer({ env });
  const dir = server.root;
  const fresh = async (s: TestServer, tag: string) => {
    const d = join(s.root, tag);
    await Deno.mkdir(d);
    return d;
  };

  await t.step("a shell command ends", async () => {
    const d = await fresh(server, "shell");
    // The command waits until each has written its pid, then ends.
    const wait = orphaned.map((n) => `while [ ! -s ${join(d, n)}.pid ]; do sleep 0.01; done;`);
    await json(
      await server.post("/process/shell", { cmd: `${escapes(d, orphaned)} ${wait.join(" ")}` }),
    );
    // The command has ended; what it left must have ended with it.
    await allGone("the command", await pids(d, orphaned, false));
  });

  await t.step("a background process is killed", async () => {
    const d = await fresh(server, "background");
    const p = await json(
      await server.post("/process/start", { cmd: escapes(d, attached) + " sleep 300" }),
    );
    const found = await pids(d, attached);
    // Each runs in a cgroup of the hierarchy asked for, wherever its group or session went.
    for (const pid of Object.values(found)) {
      const cgroup = Deno.readTextFileSync(`/proc/${pid}/cgroup`);
      if (treeLine) assert.match(cgroup, treeLine, `pid ${pid}`);
    }
    await json(await server.post(`/process/${p.pid}/signal`, { signal: "SIGKILL" }));
    await allGone("the background process", found);
  });

  await t.step("a code context is removed", async () => {
    const d = await fresh(server, "context");
    const ctx = await json(
      await server.post("/code/run", { action: "create_context", language: "bash" }),
    );
    await json(
      await server.post("/code/run", { context_id: ctx.id, code: escapes(d, attached) }),
    );
    const found = await pids(d, attached);
    await json(
      await server.post("/code/run", { action: "remove_context", context_id: ctx.id }),
    );
    await allGone("the context", found);
  });

  await t.step("a python context is removed", async () => {
    const d = await fresh(server, "python");
    const ctx = await json(
      await server.post("/code/run", { action: "create_context", language: "python" }),
    );
    // A new session and a grandchild whose parent exits: both leave the kernel's group.
    const code = "import subprocess\n" +
      `subprocess.Popen(["sh", "-c", ${
        JSON.stringify(`echo $$ > ${d}/setsid.pid; exec sleep 300`)
      }], ` +
      "start_new_session=True)\n" +
      `subprocess.run(["sh", "-c", ${
        JSON.stringify(`( ${`sh -c 'echo $$ > ${d}/double.pid; exec sleep 300'`} & )`)
      }])\n`;
    const ran = await json(await server.post("/code/run", { context_id: ctx.id, code }));
    assert.equal(ran.error, null, JSON.stringify(ran));
    const names = ["setsid", "double"];
    const found = await pids(d, names);
    await json(
      await server.post("/code/run", { action: "remove_context", context_id: ctx.id }),
    );
    await allGone("the python context", found);
  });

  await t.step("the server stops", async () => {
    const d = join(dir, "..", `stop-${crypto.randomUUID()}`);
    await Deno.mkdir(d);
    try {
      await using other = await startTestServer({ env, policy: { paths: { allow: [d, "."] } } });
      await json(await other.post("/process/start", { cmd: escapes(d, attached) + " sleep 300" }));
      const found = await pids(d, attached);
      await other.close();
      await allGone("the server", found);
    } finally {
      await Deno.remove(d, { recursive: true });
    }
  });
}

Deno.test({
  name: "process trees (cgroup v2): setsid, double fork, disown and set -m end with their owner",
  ignore: !hasV2, // needs a writable cgroup v2 hierarchy
  fn: (t) => cases(t, { SANDBAR_PROCESS_TREES: "cgroup2" }, true),
});

Deno.test({
  name: "process trees (cgroup v1): setsid, double fork, disown and set -m end with their owner",
  ignore: !hasV1, // needs a writable cgroup v1 freezer hierarchy
  fn: (t) => cases(t, { SANDBAR_PROCESS_TREES: "cgroup1" }, true),
});

Deno.test({
  name:
    "process trees (cgroup v1, Deno.Command spawns): the shell moves itself in before the program runs",
  ignore: !hasV1, // needs a writable cgroup v1 freezer hierarchy
  fn: (t) => cases(t, { SANDBAR_PROCESS_TREES: "cgroup1", SANDBAR_PROCESS_SPAWN: "command" }, true),
});

Deno.test({
  name: "process trees (session fallback): what keeps its session or parent ends with its owner",
  fn: (t) => cases(t, { SANDBAR_PROCESS_TREES: "session" }, false),
});
