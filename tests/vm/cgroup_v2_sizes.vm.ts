/**
 * A local sandbox's sizes, pause and kill on a pure cgroup v2 host, run in a VM (`tests/vm/`):
 * this project's CI host has its controllers on cgroup v1, and they cannot be moved to v2 while
 * the host's own cgroups use them, so the v2 limit files (`cpu.max`, `memory.max`,
 * `memory.swap.max`, `pids.max`), the v2 shape of the server's reserve and the v2 freeze and kill
 * would otherwise never run. The VM boots the host's kernel with `cgroup_no_v1=all` under QEMU's
 * emulation, on the host's own files, and runs the tests below in it as root.
 *
 * What runs there, and what does not (each judged as it is on a v1 host):
 *
 * - from `local_sizes_test.ts`: memory (an OOM inside one sandbox only, reported while a
 *   neighbour answers), CPU (`cpu: 1` holds three loops to one core, by `cpu.stat`), pause (a
 *   forking loop frozen, then resumed) and kill (a `setsid` double fork);
 * - `local_cgroup_v2_user_test.ts`: the same sizes for a user who is not root, in a subtree
 *   delegated to that user as systemd's `Delegate=yes` does;
 * - all of `local_cgroup_v2_test.ts`: the v2 limit files and the reserve's `server` and `work`
 *   leaves, `info`, `getMetrics()` and `system.metrics` reporting them, a fork loop held at
 *   `work`'s share while the server answers, freeze and kill.
 *
 * Left out, to keep the run to minutes (the VM's CPUs are emulated: a create takes about 10 s,
 * each test 15-60 s on a quiet host and twice that on a loaded one): the memory hog with a fork
 * bomb (a command during both took over its 70 s there; the v2 file holds its own fork loop), the
 * lifetime test (its 8 s timeout runs out during the create), and the tests with no v2 path of
 * their own (disk, `nproc`/`free`, `system.metrics`, Chromium, persistence: all but the lifetime
 * test passed in the VM once, the whole file taking 10 min), the hybrid-host test (v1 only).
 *
 * A test ignored in the VM counts as a failure here: there it has what it needs. It runs after
 * the rest of the suite, on its own (`deno task test:vm`): see `docs/testing.md`.
 */

import assert from "node:assert/strict";
import { assertPassedInVm } from "./judge.ts";
import { vmUnavailable } from "./run.ts";

const FILES = [
  "tests/sdk/local_sizes_test.ts",
  "tests/sdk/local_cgroup_v2_test.ts",
  "tests/sdk/local_cgroup_v2_user_test.ts",
];

/** `local_cgroup_v2_user_test.ts`: a user who is not root, in a subtree delegated to it. */
const DELEGATED = "cgroup v2 delegated: a user's sandbox gets its sizes in the user's own subtree";

/** The tests of `local_sizes_test.ts` run in the VM (all of the other file runs). */
const SIZES = [
  "memory: an allocation past it is killed inside that sandbox only, and reported",
  "cpu: 1 holds three busy loops to about one core, by the cgroup's accounting",
  "pause freezes a program forking in a tight loop; resume continues it",
  "kill ends a setsid double-forked child (isolation bwrap)",
];

function regexQuote(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

const why = vmUnavailable();
if (why !== null) console.log(`cgroup_v2_sizes.vm.ts: ignored, it ${why}`);

Deno.test({
  name: "cgroup v2 (in a VM): sizes, the server's reserve, pause and kill hold on pure v2",
  ignore: why !== null, // qemu-system-x86 and linux-image-amd64 (.ci/run installs both)
  sanitizeResources: false,
  fn: async () => {
    const named = [...SIZES, DELEGATED];
    const filter = `/^(${[...named.map(regexQuote), "cgroup v2: .*"].join("|")})$/`;
    const passed = await assertPassedInVm({
      files: FILES,
      expected: named,
      expectedPrefixes: ["cgroup v2: "],
      denoArgs: ["--filter", filter],
    });
    assert.ok(passed >= named.length + 3, `only ${passed} tests passed in the VM`);
  },
});
