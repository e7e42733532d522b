/**
 * The home's host (`sdk/providers/local/host.ts`): one process supervises every sandbox with
 * bubblewrap of a home, whichever program created it; it starts once however many creates race,
 * leaves on its own after its last sandbox, takes its sandboxes along when it dies, and takes
 * nothing but a sandbox directory of its own home.
 */

import assert from "node:assert/strict";
import { LocalProvider, Sandbox } from "../../sdk/mod.ts";
import { procStat } from "../../sdk/providers/local/procfs.ts";
import { processesMentioning, sandboxDirs } from "./sandbox_helpers.ts";
import { eventually } from "../helpers/wait.ts";

interface Recorded {
  supervisor: { pid: number };
  hosted?: true;
}

function stateOf(home: string, id: string): Recorded {
  return JSON.parse(Deno.readTextFileSync(`${home}/sandboxes/${id}/state.json`));
}

function alive(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== null && stat.state !== "Z";
}

function hostFiles(home: string, suffix: string): string[] {
  try {
    return [...Deno.readDirSync(`${home}/host`)].map((e) => e.name).filter((n) =>
      n.endsWith(suffix)
    );
  } catch {
    return [];
  }
}

async function withHome(fn: (home: string, provider: LocalProvider) => Promise<void>) {
  const home = await Deno.makeTempDir({ prefix: "sbh-" });
  try {
    await fn(home, new LocalProvider({ home }));
  } finally {
    for (const sandbox of await Sandbox.list({ provider: new LocalProvider({ home }) })) {
      await new LocalProvider({ home }).kill(sandbox.sandboxId);
    }
    await eventually("the host left", () => processesMentioning(home).length === 0, 15_000);
    await Deno.remove(home, { recursive: true });
  }
}

Deno.test("sandboxes of a home share one host; one killed leaves the other; the host leaves after the last", async () => {
  await withHome(async (home, provider) => {
    // Five creates race with no host running: one host starts, and supervises all five.
    const sandboxes = await Promise.all(
      Array.from({ length: 5 }, () => Sandbox.create({ provider })),
    );
    const pids = new Set(sandboxes.map((s) => stateOf(home, s.id).supervisor.pid));
    assert.equal(pids.size, 1, `one host for five sandboxes: ${[...pids]}`);
    const [host] = pids;
    assert.ok(sandboxes.every((s) => stateOf(home, s.id).hosted === true));
    assert.equal(hostFiles(home, ".sock").length, 1);
    await sandboxes[0].kill();
    for (const sandbox of sandboxes.slice(1)) {
      const r = await sandbox.commands.run("echo $((6 * 7))");
      assert.equal(r.stdout, "42\n", "the others answer after one was killed");
    }
    assert.ok(alive(host));
    await Promise.all(sandboxes.slice(1).map((s) => s.kill()));
    await eventually("the host leaves after its last sandbox", () => !alive(host), 15_000);
    assert.deepEqual(hostFiles(home, ".sock"), [], "its socket removed");
    assert.deepEqual(sandboxDirs(home), []);
  });
});

Deno.test("a second program's sandbox joins the same host", async () => {
  await withHome(async (home, provider) => {
    const first = await Sandbox.create({ provider });
    const mod = new URL("../../sdk/mod.ts", import.meta.url).href;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        "--ext=ts",
        `import { Sandbox } from ${JSON.stringify(mod)};\n` +
        `const s = await Sandbox.create(); console.log(s.id);`,
      ],
      env: { SANDBAR_HOME: home },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const id = new TextDecoder().decode(out.stdout).trim();
    // The program that made it has ended; its sandbox lives on in the host.
    const second = await Sandbox.connect(id, { provider });
    assert.equal((await second.commands.run("echo joined")).stdout, "joined\n");
    assert.equal(stateOf(home, id).supervisor.pid, stateOf(home, first.id).supervisor.pid);
    await first.kill();
    await second.kill();
  });
});

Deno.test("a killed host takes its sandboxes along; the next create starts a new host", async () => {
  await withHome(async (home, provider) => {
    const a = await Sandbox.create({ provider });
    const b = await Sandbox.create({ provider });
    const host = stateOf(home, a.id).supervisor.pid;
    Deno.kill(host, "SIGKILL");
    await eventually(
      "no process of either sandbox is left",
      () => [a, b].every((s) => processesMentioning(`${home}/sandboxes/${s.id}`).length === 0),
      10_000,
    );
    assert.deepEqual(await Sandbox.list({ provider }), [], "list removes both");
    assert.deepEqual(sandboxDirs(home), []);
    // Its socket file is left behind, with nothing listening: a create starts a new host.
    assert.equal(hostFiles(home, ".sock").length, 1);
    const c = await Sandbox.create({ provider });
    assert.notEqual(stateOf(home, c.id).supervisor.pid, host);
    assert.equal((await c.commands.run("echo new")).stdout, "new\n");
    await c.kill();
  });
});

Deno.test("the host takes only a sandbox directory of its own home, and starts none twice", async () => {
  await withHome(async (home, provider) => {
    const sandbox = await Sandbox.create({ provider });
    const [socket] = hostFiles(home, ".sock");
    const ask = async (line: string) => {
      const conn = await Deno.connect({ transport: "unix", path: `${home}/host/${socket}` });
      await conn.write(new TextEncoder().encode(`${line}\n`));
      const answer = new TextDecoder().decode(
        (await new Response(conn.readable).arrayBuffer()) as ArrayBuffer,
      );
      return answer;
    };
    for (const path of ["/etc", `${home}/../x/sandboxes/abc`, `${home}/sandboxes/../../etc`]) {
      const answer = JSON.parse(await ask(path));
      assert.equal(answer.event, "error", path);
      assert.match(answer.message, /not a sandbox of/);
    }
    // Its own running sandbox is not started a second time.
    const again = (await ask(`${home}/sandboxes/${sandbox.id}`)).split("\n");
    assert.match(again[0], /^hosted \d+$/);
    assert.match(JSON.parse(again[1]).message, /is running, not to be started/);
    assert.equal((await sandbox.commands.run("echo still")).stdout, "still\n");
    await sandbox.kill();
  });
});
