/**
 * Process trees inside a local sandbox on a pure cgroup v2 host (`nsdelegate`, as systemd mounts
 * it), run in a VM (`tests/vm/`): this project's CI host is hybrid, where sandboxes get v1
 * cgroups, so the v2 delegation (the sandbox's `work` cgroup handed to its server, the sandbox's
 * cgroup namespace rooted at `work`, the server's two-step moves; see
 * `sdk/providers/local/tree_delegation.ts`) would otherwise never run.
 *
 * What runs there: all of `sandbox_process_trees_test.ts` (every escape form ended by cgroup at a
 * command's end, a background kill, a context's removal and the sandbox's stop; the capabilities
 * saying no fallback; a confined process trying every way through the delegated and host-opened
 * descriptors and the read-only mount; a sandbox without a cgroup ending trees by session) and
 * the v2 cases of `tree_delegation_test.ts`. A test ignored or failed in the VM fails here. It
 * runs after the rest of the suite, on its own (`deno task test:vm`): see `docs/testing.md`.
 */

import { assertPassedInVm } from "./judge.ts";
import { vmUnavailable } from "./run.ts";

const FILES = ["tests/sdk/sandbox_process_trees_test.ts", "tests/sdk/tree_delegation_test.ts"];

/** Every test that must pass in the VM. */
const EXPECTED = [
  "local sandbox: what left its group ends with its command, process, context and sandbox",
  "local sandbox: a confined process can neither use the delegated cgroup nor leave its tree",
  "local sandbox without a cgroup (limits: false): trees by session, and the warning says so",
  "tree delegation: a detached work (v2), `..` stays at its top, inherited once",
  "tree delegation: nothing to delegate says why",
];

const why = vmUnavailable();
if (why !== null) console.log(`cgroup_v2_trees.vm.ts: ignored, it ${why}`);

Deno.test({
  name: "cgroup v2 (in a VM): a local sandbox's process trees end by cgroup, and stay shut",
  ignore: why !== null, // qemu-system-x86 and linux-image-amd64 (.ci/run installs both)
  sanitizeResources: false,
  fn: async () => {
    await assertPassedInVm({ files: FILES, expected: EXPECTED });
  },
});
