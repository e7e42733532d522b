/**
 * The descriptor the supervisor hands a sandbox's server for its process trees
 * (`sdk/providers/local/tree_delegation.ts`): a detached copy of the mount at the sandbox's
 * freezer cgroup, so `..` at its top leads back to it, never to the host's other cgroups; it is
 * inherited by the next process started (and only while open), with a number from 10 up; cgroup
 * v2 gets none, with the reason. Judged on a real freezer cgroup made for the test.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ownTreeCgroup } from "../../server/process/tree_cgroups.ts";
import {
  closeTreeDelegation,
  openTreeDelegation,
} from "../../sdk/providers/local/tree_delegation.ts";

const place = ownTreeCgroup(1);

function run(script: string): string {
  const out = new Deno.Command("sh", { args: ["-c", script], stdout: "piped", stderr: "piped" })
    .outputSync();
  return new TextDecoder().decode(out.stdout);
}

Deno.test({
  name: "tree delegation: a detached freezer cgroup, `..` stays at its top, inherited once",
  ignore: !("dir" in place), // needs a writable cgroup v1 freezer hierarchy (root)
  fn() {
    const own = "dir" in place ? place.dir : "";
    const sandbox = join(own, `sandbar-delegation-test-${crypto.randomUUID().slice(0, 8)}`);
    const sibling = `${sandbox}-sibling`;
    Deno.mkdirSync(sandbox);
    Deno.mkdirSync(sibling);
    Deno.mkdirSync(join(sandbox, "inside"));
    try {
      const delegation = openTreeDelegation({ version: 1, dirs: { freezer: sandbox } });
      assert.ok("fd" in delegation, JSON.stringify(delegation));
      assert.ok(delegation.fd >= 10);
      assert.equal(delegation.spec, `trees1:${delegation.fd}`);
      const at = `/proc/self/fd/${delegation.fd}`;
      try {
        // A child started now has it, and sees the sandbox's cgroup through it; `..` and `../..`
        // are that same directory, not the host's: the sibling cgroup is nowhere to be seen.
        const seen = run(`ls ${at}/; echo --; ls ${at}/..; echo --; ls ${at}/../..`).split("--");
        assert.equal(seen.length, 3);
        for (const listing of seen) {
          const names = listing.split("\n").filter(Boolean);
          assert.ok(names.includes("inside"), listing);
          assert.ok(names.includes("freezer.state"), listing);
          assert.ok(!names.some((n) => n.startsWith("sandbar-delegation-test-")), listing);
        }
      } finally {
        closeTreeDelegation(delegation);
      }
      // Closed: the next child gets nothing at that number.
      assert.equal(run(`[ -e ${at}/freezer.state ] && echo held`), "");
    } finally {
      Deno.removeSync(join(sandbox, "inside"));
      Deno.removeSync(sandbox);
      Deno.removeSync(sibling);
    }
  },
});

Deno.test("tree delegation: cgroup v2 gets none, and says why", () => {
  const none = openTreeDelegation({ version: 2, dirs: { unified: "/sys/fs/cgroup/x" } });
  assert.ok("reason" in none);
  assert.match(none.reason, /only a cgroup v1 freezer cgroup is delegated/);
});
