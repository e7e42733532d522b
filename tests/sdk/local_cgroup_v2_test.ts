/**
 * The cgroup v2 paths of a local sandbox's pause and kill (`cgroup.freeze`, `cgroup.kill`), run
 * for real where a v2 hierarchy is writable. This project's CI host is cgroup v1 with an empty
 * hybrid v2 mount at `/sys/fs/cgroup/unified`: it has no controllers there (so no sizes), but
 * freezing and killing are core to v2 and work on it.
 */

import assert from "node:assert/strict";
import {
  type CgroupRef,
  cgroupStats,
  freeze,
  killAll,
  members,
  removeCgroup,
} from "../../sdk/providers/local/cgroup.ts";

function v2Dir(): string | null {
  for (const base of ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]) {
    try {
      if (Deno.uid() === 0 && Deno.statSync(`${base}/cgroup.controllers`).isFile) return base;
    } catch { /* next */ }
  }
  return null;
}

const base = v2Dir();

Deno.test({
  name: "cgroup v2: freeze stops every member, new children included; kill ends them all",
  ignore: base === null, // needs root and a cgroup v2 mount
  fn: async () => {
    const dir = `${base}/sizes-v2-test-${crypto.randomUUID().slice(0, 8)}`;
    Deno.mkdirSync(dir);
    const ref: CgroupRef = { version: 2, dirs: { unified: dir } };
    const counter = await Deno.makeTempFile();
    // A loop forking a child per increment, entered into the cgroup before it runs.
    const child = new Deno.Command("/bin/sh", {
      args: [
        "-c",
        `echo $$ > ${dir}/cgroup.procs && exec setsid sh -c ` +
        `'while :; do sh -c "echo x >> ${counter}"; done'`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      const size = () => Deno.statSync(counter).size;
      const until = Date.now() + 10_000;
      while (size() < 40 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      assert.ok(size() >= 40, "the loop never ran");
      assert.ok(members(ref).length >= 1);
      await freeze(ref);
      assert.match(Deno.readTextFileSync(`${dir}/cgroup.events`), /^frozen 1$/m);
      const frozen = size();
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(size(), frozen, "a member ran while frozen");
      await freeze(ref, false);
      const thawed = Date.now() + 10_000;
      while (size() <= frozen && Date.now() < thawed) await new Promise((r) => setTimeout(r, 50));
      assert.ok(size() > frozen, "no progress after the thaw");
      assert.equal(cgroupStats(ref).oomKills, 0);
      await killAll(ref);
      assert.deepEqual(members(ref), []);
      await child.status;
    } finally {
      await killAll(ref).catch(() => {});
      removeCgroup(ref);
      await Deno.remove(counter);
    }
    assert.throws(() => Deno.statSync(dir), "the cgroup is removed");
  },
});
