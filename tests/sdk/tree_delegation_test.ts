/**
 * The descriptor the supervisor hands a sandbox's server for its process trees
 * (`sdk/providers/local/tree_delegation.ts`): a detached copy of the mount at the sandbox's
 * freezer cgroup (v1) or at its `work` cgroup (v2), so `..` at its top leads back to it, never to
 * the host's other cgroups; it is inherited by the next process started (and only while open),
 * with a number from 10 up; where there is nothing to delegate, the reason. Judged on real
 * cgroups made for the test.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ownTreeCgroup } from "../../server/process/tree_cgroups.ts";
import {
  closeTreeDelegation,
  openTreeDelegation,
} from "../../sdk/providers/local/tree_delegation.ts";

function run(script: string): string {
  const out = new Deno.Command("sh", { args: ["-c", script], stdout: "piped", stderr: "piped" })
    .outputSync();
  return new TextDecoder().decode(out.stdout);
}

for (const version of [1, 2] as const) {
  const place = ownTreeCgroup(version);
  // What each version delegates, and a file only a cgroup directory of that hierarchy has.
  const [what, file] = version === 1
    ? ["freezer cgroup", "freezer.state"]
    : ["work", "cgroup.kill"];
  Deno.test({
    name:
      `tree delegation: a detached ${what} (v${version}), \`..\` stays at its top, inherited once`,
    // Needs a writable hierarchy of that version (root): v1's freezer, or any cgroup2 mount.
    ignore: !("dir" in place),
    fn() {
      const own = "dir" in place ? place.dir : "";
      const sandbox = join(own, `sandbar-delegation-test-${crypto.randomUUID().slice(0, 8)}`);
      const sibling = `${sandbox}-sibling`;
      const top = version === 1 ? sandbox : join(sandbox, "work");
      const made = [sandbox, sibling, ...(version === 2 ? [top] : []), join(top, "inside")];
      for (const dir of made) Deno.mkdirSync(dir);
      try {
        const delegation = openTreeDelegation(
          version === 1
            ? { version: 1, dirs: { freezer: sandbox } }
            : { version: 2, dirs: { unified: sandbox } },
        );
        assert.ok("fd" in delegation, JSON.stringify(delegation));
        assert.ok(delegation.fd >= 10);
        assert.equal(delegation.spec, `trees${version}:${delegation.fd}`);
        const at = `/proc/self/fd/${delegation.fd}`;
        try {
          // A child started now has it, and sees the delegated cgroup through it; `..` and
          // `../..` are that same directory, not the host's: neither the sandbox's own cgroup
          // (v2) nor the sibling cgroup is to be seen.
          const seen = run(`ls ${at}/; echo --; ls ${at}/..; echo --; ls ${at}/../..`).split("--");
          assert.equal(seen.length, 3);
          for (const listing of seen) {
            const names = listing.split("\n").filter(Boolean);
            assert.ok(names.includes("inside"), listing);
            assert.ok(names.includes(file), listing);
            assert.ok(!names.includes("work"), listing);
            assert.ok(!names.some((n) => n.startsWith("sandbar-delegation-test-")), listing);
          }
        } finally {
          closeTreeDelegation(delegation);
        }
        // Closed: the next child gets nothing at that number.
        assert.equal(run(`[ -e ${at}/${file} ] && echo held`), "");
      } finally {
        for (const dir of made.reverse()) Deno.removeSync(dir);
      }
    },
  });
}

Deno.test("tree delegation: nothing to delegate says why", () => {
  const none = openTreeDelegation({ version: 2, dirs: { unified: "/sys/fs/cgroup/sandbar-none" } });
  assert.ok("reason" in none);
  assert.match(
    none.reason,
    /open_tree of \/sys\/fs\/cgroup\/sandbar-none\/work failed \(errno 2\)/,
  );
  const v1 = openTreeDelegation({ version: 1, dirs: { memory: "/sys/fs/cgroup/memory/x" } });
  assert.ok("reason" in v1);
  assert.match(v1.reason, /no cgroup v1 freezer cgroup/);
});
