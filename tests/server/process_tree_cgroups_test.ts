/**
 * The cgroup primitives of process trees (`server/process/tree_cgroups.ts`), in each hierarchy
 * found here, as the server finds it (`/proc/self/mountinfo`, `/proc/self/cgroup`): on this
 * project's hybrid host both the v1 freezer and the v2 `unified` mount. Judged by the processes:
 * a loop that forks a child per increment stops counting while its tree is frozen and goes on once
 * thawed; a `setsid` process whose parent had already exited (what the session fallback cannot
 * find) is gone once its tree is ended, and so is the loop, whether v2 ends it with `cgroup.kill`
 * or by freezing; the tree's cgroup is removed.
 */

import assert from "node:assert/strict";
import { closeTrees, ProcessTree, treeCgroups } from "../../server/process/trees.ts";
import { CommandChild } from "../../server/process/command_child.ts";
import { type CgroupVersion, ownTreeCgroup } from "../../server/process/tree_cgroups.ts";
import { eventually } from "../helpers/wait.ts";
import { procStat } from "../../sdk/providers/local/procfs.ts";
import { cgroupMounts } from "../../shared/cgroup_paths.ts";
import { startTestServer } from "../helpers/server.ts";

// This test process opens trees itself: its directories go when it is done.
Deno.test.afterAll(closeTrees);

function alive(pid: number): boolean {
  const st = procStat(pid);
  return st !== null && st.state !== "Z" && st.state !== "X";
}

function opened(version: CgroupVersion) {
  const cgroups = treeCgroups(version);
  if (typeof cgroups === "string") throw new Error(cgroups);
  return cgroups;
}

/** `sh -c script` started in `tree` as the server starts an unconfined process. */
function shell(tree: ProcessTree, script: string): CommandChild {
  const env = { PATH: "/usr/bin:/bin" };
  return tree.spawn(() =>
    new CommandChild({ argv: ["/bin/sh", "-c", script], cwd: "/", env, stdin: false }, () => {})
  );
}

/** A loop forking `sh` per line it appends to `counter`, started in `tree`. */
function forkingLoop(tree: ProcessTree, counter: string): CommandChild {
  return shell(tree, `while :; do sh -c 'echo x >> ${counter}'; done`);
}

async function grows(counter: string, beyond: number): Promise<boolean> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    if (Deno.statSync(counter).size > beyond) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

async function gone(tree: ProcessTree, pids: number[]): Promise<void> {
  await eventually("every member ended", () => pids.every((p) => !alive(p)), 5000);
  // A member killed in end()'s last round may still be exiting: listed until it has.
  await eventually("no member left", () => tree.members().length === 0, 5000);
  await eventually("the tree's cgroup removed", () => {
    try {
      Deno.statSync(tree.cgroup!);
      return false;
    } catch {
      return true;
    }
  }, 5000);
}

for (const version of [2, 1] as const) {
  const here = "dir" in ownTreeCgroup(version);

  Deno.test({
    name: `process tree (cgroup v${version}): freeze holds a forking loop, thaw lets it go on`,
    ignore: !here, // needs this cgroup hierarchy, writable
    fn: async () => {
      const tree = new ProcessTree(opened(version));
      const counter = await Deno.makeTempFile();
      const loop = forkingLoop(tree, counter);
      const members: number[] = [];
      try {
        assert.ok(tree.cgroup, "the tree has a cgroup");
        assert.ok(await grows(counter, 40), "the loop never ran");
        assert.ok(tree.members().includes(loop.pid), "the loop is in its tree");
        assert.equal(tree.freeze(true), true);
        const frozen = Deno.statSync(counter).size;
        members.push(...tree.members());
        await new Promise((r) => setTimeout(r, 400));
        assert.equal(Deno.statSync(counter).size, frozen, "a member ran while frozen");
        assert.equal(tree.freeze(false), true);
        assert.ok(await grows(counter, frozen), "no progress after the thaw");
        members.push(...tree.members());
      } finally {
        tree.end();
        await loop.status;
        await Deno.remove(counter);
      }
      await gone(tree, members);
    },
  });

  Deno.test({
    name: `process tree (cgroup v${version}): a setsid process whose parent exited is ended`,
    ignore: !here,
    fn: async () => {
      const tree = new ProcessTree(opened(version));
      const file = await Deno.makeTempFile();
      // The leader starts a subshell that runs setsid in the background and exits at once:
      // the sleeper's parent is gone before it is found, and it leads a session of its own.
      const leader = shell(
        tree,
        `( setsid sh -c 'echo $$ > ${file}; exec sleep 300' >/dev/null 2>&1 </dev/null & ); ` +
          `while [ ! -s ${file} ]; do sleep 0.01; done`,
      );
      let pid = 0;
      try {
        await leader.status;
        pid = Number(Deno.readTextFileSync(file));
        const st = procStat(pid);
        assert.ok(st && alive(pid), "the sleeper runs");
        assert.equal(st.sid, pid, "the sleeper leads its own session");
        assert.ok(tree.members().includes(pid), "the sleeper is in the tree");
        tree.end(true);
        await gone(tree, [pid]);
      } finally {
        if (pid && alive(pid)) Deno.kill(pid, "SIGKILL");
        await Deno.remove(file);
      }
    },
  });
}

Deno.test({
  name: "process tree (cgroup v2): ended by freezing (a kernel without cgroup.kill), nothing left",
  ignore: !("dir" in ownTreeCgroup(2)),
  fn: async () => {
    const cgroups = opened(2);
    const tree = new ProcessTree(cgroups);
    const counter = await Deno.makeTempFile();
    const loop = forkingLoop(tree, counter);
    try {
      assert.ok(await grows(counter, 40), "the loop never ran");
      const members = tree.members();
      cgroups.end(tree.cgroup!, false, "freeze");
      await loop.status;
      await gone(tree, members);
      const after = Deno.statSync(counter).size;
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(Deno.statSync(counter).size, after, "something still counts");
    } finally {
      tree.end();
      await Deno.remove(counter);
    }
  },
});

/** The cgroup2 mount points this process sees. */
function v2MountPoints(): string[] {
  return cgroupMounts(Deno.readTextFileSync("/proc/self/mountinfo"))
    .filter((m) => m.type === "cgroup2").map((m) => m.point);
}

const unshare = (() => {
  try {
    return new Deno.Command("unshare", { args: ["--version"] }).outputSync().success;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "process trees: the hierarchy is found in mountinfo; asked for and missing, the server " +
    "stops saying what it looked for; not asked, it takes the other",
  // Needs both hierarchies (one to hide, one to fall back to) and root for a mount namespace.
  ignore: !unshare || Deno.uid() !== 0 || !("dir" in ownTreeCgroup(2)) ||
    !("dir" in ownTreeCgroup(1)),
  fn: async () => {
    // The server runs in a mount namespace of its own where no cgroup2 file system is mounted.
    const hide = v2MountPoints().map((p) => `umount -l '${p}'`).join(" && ");
    const wrapper = [
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      `${hide} && exec "$@"`,
      "sh",
    ];
    await assert.rejects(
      startTestServer({ wrapper, env: { SANDBAR_PROCESS_TREES: "cgroup2" } }),
      /SANDBAR_PROCESS_TREES=cgroup2: process trees cannot be cgroups here \(cgroup v2: no cgroup v2 mount in \/proc\/self\/mountinfo\)/,
    );
    await using server = await startTestServer({ wrapper });
    const res = await server.post("/process/start", { cmd: "sleep 30" });
    const started = await res.json();
    assert.equal(res.status, 200, JSON.stringify(started));
    // In a freezer cgroup of its tree (v1), since v2 is nowhere to be found.
    assert.match(
      Deno.readTextFileSync(`/proc/${started.pid}/cgroup`),
      /^\d+:[^:]*\bfreezer\b[^:]*:.*\/sandbar-\d+\/t\d+-[0-9a-f]+$/m,
    );
    await server.post(`/process/${started.pid}/signal`, { signal: "SIGKILL" });
    const caps = await (await server.fetch("/capabilities")).json();
    assert.deepEqual(caps.warnings.filter((w: string) => w.startsWith("Process trees")), []);
  },
});

Deno.test({
  name: "process tree (cgroup v2): a process something else started while the server was in " +
    "the tree goes back; the tree keeps its own, an orphan included",
  ignore: !("dir" in ownTreeCgroup(2)),
  fn: async () => {
    const cgroups = opened(2);
    const tree = new ProcessTree(cgroups);
    const file = await Deno.makeTempFile();
    const spawn = (script: string) =>
      new Deno.Command("/bin/sh", {
        args: ["-c", script],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
    let stray: Deno.ChildProcess | undefined;
    // As another isolate of this process would: a process started in the same moment.
    const leader = cgroups.bornIn(tree.cgroup!, () => {
      stray = spawn("exec sleep 30");
      return spawn(`(setsid sh -c 'echo $$ > ${file}; exec sleep 30' &); exec sleep 30`);
    });
    cgroups.settle(tree.cgroup!, leader.pid);
    let orphan = 0;
    try {
      assert.ok(!tree.members().includes(stray!.pid), "the stray went back");
      assert.doesNotMatch(Deno.readTextFileSync(`/proc/${stray!.pid}/cgroup`), /sandbar-/);
      orphan = await eventually("the orphan wrote its pid", () => {
        const text = Deno.readTextFileSync(file).trim();
        return text ? Number(text) : null;
      });
      assert.ok(tree.members().includes(leader.pid) && tree.members().includes(orphan));
      tree.end();
      await leader.status;
      await gone(tree, [leader.pid, orphan]);
      assert.ok(alive(stray!.pid), "what is not the tree's lives on");
    } finally {
      stray?.kill("SIGKILL");
      await stray?.status;
      if (orphan && alive(orphan)) Deno.kill(orphan, "SIGKILL");
      await Deno.remove(file);
    }
  },
});
