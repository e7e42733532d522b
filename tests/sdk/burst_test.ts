/**
 * A hundred local sandboxes created twenty at a time, all alive at once, each answering a
 * command, then all killed: nothing of them is left (processes, mounts, loop devices, sockets,
 * cgroups, files).
 */

import assert from "node:assert/strict";
import { LocalProvider, Sandbox } from "../../sdk/mod.ts";
import { processesMentioning, sandboxDirs } from "./sandbox_helpers.ts";
import { eventually } from "../helpers/wait.ts";

const TOTAL = 100;
const IN_FLIGHT = 20;

/** Lines of a /proc text file that mention `text`. */
function linesMentioning(path: string, text: string): string[] {
  try {
    return Deno.readTextFileSync(path).split("\n").filter((l) => l.includes(text));
  } catch {
    return [];
  }
}

/** Cgroup directories named after one of `ids` (sandbar/<id> or <id>.<n>, v1 or v2). */
function cgroupsOf(ids: Set<string>): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 8) return;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory) continue;
      const path = `${dir}/${e.name}`;
      if (ids.has(e.name.split(".")[0])) found.push(path); // <id>, or <id>.<n> once woken
      else if (e.name === "sandbar" || depth < 3) walk(path, depth + 1);
    }
  };
  walk("/sys/fs/cgroup", 0);
  return found;
}

Deno.test("100 sandboxes, 20 in flight, each answers, all killed: nothing left", async () => {
  const home = await Deno.makeTempDir({ prefix: "sbb-" });
  const provider = new LocalProvider({ home });
  const sandboxes: Sandbox[] = [];
  const failures: string[] = [];
  try {
    let next = 0;
    const worker = async () => {
      while (next < TOTAL) {
        const i = next++;
        try {
          const sandbox = await Sandbox.create({ provider, timeout: 600, envs: { N: String(i) } });
          sandboxes.push(sandbox);
          const r = await sandbox.commands.run('echo "$N"');
          if (r.stdout !== `${i}\n`) failures.push(`${i}: ${JSON.stringify(r.stdout)}`);
        } catch (e) {
          failures.push(`${i}: ${(e as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.deepEqual(failures, []);
    assert.equal(sandboxes.length, TOTAL);
    assert.equal(
      (await Sandbox.list({ provider, limit: 1000 })).length,
      TOTAL,
      "all alive at once",
    );
  } finally {
    for (let i = 0; i < sandboxes.length; i += IN_FLIGHT) {
      await Promise.all(sandboxes.slice(i, i + IN_FLIGHT).map((s) => s.kill()));
    }
  }
  const ids = new Set(sandboxes.map((s) => s.id));
  // The home's host (`host.ts`) leaves 2 s after its last sandbox; a process shows as a zombie
  // before the last of its threads has closed its sockets.
  await eventually("no process or Unix socket of the sandboxes is left", () => {
    return processesMentioning(home).length === 0 &&
      linesMentioning("/proc/net/unix", home).length === 0;
  }, 30_000);
  assert.deepEqual(sandboxDirs(home), [], "no sandbox directory");
  assert.deepEqual(linesMentioning("/proc/self/mountinfo", home), [], "no mount");
  assert.deepEqual(cgroupsOf(ids), [], "no cgroup");
  const loops = await new Deno.Command("losetup", { args: ["-a"], stdout: "piped", stderr: "null" })
    .output().then((o) => new TextDecoder().decode(o.stdout)).catch(() => "");
  assert.deepEqual(loops.split("\n").filter((l) => l.includes(home)), [], "no loop device");
  await Deno.remove(home, { recursive: true });
});
