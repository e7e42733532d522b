/**
 * A local sandbox's OOM kills on cgroup v1, counted by `cgroupStats` the way the supervisor looks
 * every 500 ms: v1 counts a kill only in the cgroup it happened in, so the count walks every
 * cgroup under the sandbox's, and the walk lists a directory again only when the cgroup tree
 * under it changed (`belowWatched` in `cgroup.ts`). Each step makes real OOM kills in cgroups
 * made, nested, removed and replaced between two looks, and compares the count with a walk that
 * lists everything.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  cgroupRef,
  cgroupStats,
  cgroupSupport,
  createCgroup,
  removeCgroup,
} from "../../sdk/providers/local/cgroup.ts";
import { onPath } from "../../sdk/providers/local/on_path.ts";

const support = cgroupSupport();
const python = onPath("python3");
const why = !support.ok
  ? support.reason
  : support.version !== 1
  ? "needs cgroup v1 (v2 counts OOM kills up the tree in memory.events)"
  : Deno.uid() !== 0
  ? "needs root to make cgroups and move processes"
  : python === null
  ? "needs python3 to allocate past a limit"
  : null;

/** The OOM kills of `dir` and everything under it, listing every directory. */
function listedCount(dir: string): number {
  let sum = Number(
    /^oom_kill (\d+)$/m.exec(Deno.readTextFileSync(join(dir, "memory.oom_control")))?.[1] ?? 0,
  );
  for (const e of Deno.readDirSync(dir)) if (e.isDirectory) sum += listedCount(join(dir, e.name));
  return sum;
}

/** A cgroup under `parent` with a 16 MiB limit, and one process OOM-killed in it. */
async function oomKillIn(parent: string, name: string): Promise<string> {
  const dir = join(parent, name);
  Deno.mkdirSync(dir);
  Deno.writeTextFileSync(join(dir, "memory.limit_in_bytes"), `${16 << 20}`);
  try {
    Deno.writeTextFileSync(join(dir, "memory.memsw.limit_in_bytes"), `${16 << 20}`);
  } catch {
    // Swap not accounted here: keep the allocation out of swap, as the sandbox's limits do.
    Deno.writeTextFileSync(join(dir, "memory.swappiness"), "0");
  }
  const child = new Deno.Command("/bin/sh", {
    args: [
      "-c",
      `echo $$ > "$0/cgroup.procs" && exec "$1" -c 'b = bytearray(256 << 20)'`,
      dir,
      python!,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const status = await child.status;
  assert.equal(status.signal, "SIGKILL", `the allocation in ${name} was not OOM-killed`);
  return dir;
}

Deno.test({
  name:
    "cgroup v1: OOM kills are counted in cgroups made, nested, removed and replaced between looks",
  ignore: why !== null,
  async fn() {
    const ref = cgroupRef(support, `oom-count-${crypto.randomUUID().slice(0, 8)}`);
    createCgroup(ref, { cpu: null, memory: null, pids: null });
    const mem = ref.dirs.memory;
    try {
      assert.equal(cgroupStats(ref).oomKills, 0);
      // A cgroup made since the last look, with a kill in it.
      const a = await oomKillIn(mem, "a");
      assert.equal(cgroupStats(ref).oomKills, 1);
      // One nested below it.
      const nested = await oomKillIn(a, "nested");
      assert.equal(cgroupStats(ref).oomKills, 2);
      assert.equal(cgroupStats(ref).oomKills, listedCount(mem));
      // Removed and replaced by another between two looks: the same number of subdirectories.
      Deno.removeSync(nested);
      Deno.removeSync(a);
      const b = await oomKillIn(mem, "b");
      await oomKillIn(b, "c");
      assert.equal(cgroupStats(ref).oomKills, 2);
      assert.equal(cgroupStats(ref).oomKills, listedCount(mem));
    } finally {
      removeCgroup(ref);
    }
    assert.throws(() => Deno.statSync(mem), Deno.errors.NotFound);
  },
});
