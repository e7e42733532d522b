/**
 * What the server could not hold is said in the capabilities document's `warnings`, not only on
 * stderr: process trees ended without a cgroup (session mode), and writable paths left
 * executable because the `noexec` mount for `allow_commands` could not be made (here: the
 * server started without `CAP_SYS_ADMIN`). Each with its control, where the condition does not
 * hold and the warning is absent.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { ownTreeCgroup } from "../../server/process/tree_cgroups.ts";

async function warnings(server: { fetch(path: string): Promise<Response> }): Promise<string[]> {
  const res = await server.fetch("/capabilities");
  assert.equal(res.status, 200);
  return (await res.json()).warnings;
}

const root = Deno.uid() === 0;
// The control's cgroup mode needs a writable cgroup hierarchy (see server/process/trees.ts).
const cgroupsHere = "dir" in ownTreeCgroup(2) || "dir" in ownTreeCgroup(1);

Deno.test({
  name: "capabilities: process trees in session mode are a warning; cgroup mode is none",
  ignore: !cgroupsHere, // no freezer cgroup here for the control
  fn: async () => {
    await using session = await startTestServer({ env: { SANDBAR_PROCESS_TREES: "session" } });
    const said = (await warnings(session)).filter((w) => w.startsWith("Process trees"));
    assert.equal(said.length, 1, said.join("; "));
    assert.match(said[0], /SANDBAR_PROCESS_TREES=session/);
    assert.match(said[0], /setsid/);
    await using cgroup = await startTestServer({ env: { SANDBAR_PROCESS_TREES: "cgroup" } });
    assert.deepEqual((await warnings(cgroup)).filter((w) => w.startsWith("Process trees")), []);
  },
});

const setpriv = (() => {
  try {
    return new Deno.Command("setpriv", { args: ["--version"] }).outputSync().success;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "capabilities: a noexec mount that could not be made under allow_commands is a warning",
  ignore: !(setpriv && root), // root for the control's mount, setpriv to drop CAP_SYS_ADMIN
  fn: async () => {
    const policy = { allow_commands: ["echo", "ls"] };
    for (const dropped of [true, false]) {
      await using server = await startTestServer({
        policy,
        wrapper: dropped ? ["setpriv", "--bounding-set", "-sys_admin", "--"] : [],
      });
      // Nothing is known before the identity's first process: its spawner mounts then.
      const ran = await server.post("/process/shell", { cmd: "echo hi" });
      assert.equal(ran.status, 200, await ran.clone().text());
      assert.equal((await ran.json()).stdout, "hi\n");
      const said = (await warnings(server)).filter((w) => w.startsWith("Writable paths"));
      if (dropped) {
        assert.equal(said.length, 1, said.join("; "));
        assert.match(said[0], /allow_commands/);
      } else {
        assert.deepEqual(said, []);
      }
    }
  },
});
