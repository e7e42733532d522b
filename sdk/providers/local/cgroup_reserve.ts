/**
 * The in-sandbox server's reserve: a sandbox's own programs cannot starve the server that runs
 * them.
 *
 * A sandbox's cgroup holds the sizes its user asked for, for the whole sandbox (server included).
 * Inside it, a `work` cgroup holds every process the server starts (commands, terminals, kernels),
 * with a process limit and a memory limit a little below the sandbox's: a fork bomb stops at
 * `work`'s limit and a memory hog is killed at `work`'s, while the server, outside `work`, keeps
 * the difference to answer requests (among them the one that kills the bomb). On cgroup v1 `work`
 * is made in the `pids` and `memory` hierarchies; on cgroup v2, where a cgroup with processes
 * cannot give its children controllers, the sandbox's processes start in a `server` leaf beside
 * `work`.
 *
 * How the server's children get there (`server/process/work_cgroup.ts`): the shell that enters
 * the sandbox's cgroup opens, on the host, `work`'s `cgroup.procs` and (v1) `work`'s `tasks` and
 * the sandbox cgroup's `tasks`, and hands them down as descriptors named in `SANDBAR_WORK_FDS`
 * (inside the sandbox the cgroup file system is read-only, and on v2 the sandbox's cgroup
 * namespace does not reach `work`). None of them can raise a limit: they move processes into
 * `work`, and threads between `work` and the sandbox's cgroup. On v1 the server's spawner thread
 * moves into `work` for each spawn, so the child is born there; when `work` is full (a bomb holds
 * every slot) the spawn is made again beside the server and the child moved into `work` after:
 * the kernel holds a fork to the limit but not a move, so a command still starts.
 *
 * Process trees (what the server ends when a command, context or turn ends) are cgroups the
 * supervisor delegates by one more descriptor (see `tree_delegation.ts`). On v1 they are freezer
 * cgroups under the sandbox's own freezer cgroup (`trees1:<n>`), while a tree's processes still go
 * into `work` in the `pids` and `memory` hierarchies. On v2 they are cgroups below `work`
 * (`trees2:<n>`), so `work`'s limits hold for them: the sandbox's cgroup namespace is rooted at
 * `work`, and the server, in the `server` leaf beside it, moves in and out through `procs` and
 * one more host-opened descriptor, `home:` (the `server` leaf's `cgroup.procs`).
 *
 * @module
 */

import { join } from "node:path";

/** Sizes, null where none (as `cgroup.ts`'s `Limits`, which imports this module). */
interface Limits {
  /** CPU cores. */
  cpu: number | null;
  /** Memory in MiB. */
  memory: number | null;
  /** Processes and threads. */
  pids: number | null;
}

/** A sandbox's cgroup directories (as `cgroup.ts`'s `CgroupRef`). */
interface CgroupRef {
  /** 1 or 2. */
  version: 1 | 2;
  /** v1: controller → directory; v2: `unified` → the directory. */
  dirs: Record<string, string>;
}

/** Processes and threads kept for the server (16 in use when idle: the server, relay and init). */
export const RESERVED_PIDS = 64;

/**
 * Memory kept for the server, in MiB: 96 (the server, relay and init use about 72 when idle),
 * or an eighth of a larger sandbox's memory (a larger sandbox moves larger files through it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reservedMemory } from "./cgroup_reserve.ts";
 * assert.equal(reservedMemory(256), 96);
 * assert.equal(reservedMemory(2048), 256);
 * ```
 */
export function reservedMemory(memory: number): number {
  return Math.max(96, Math.floor(memory / 8));
}

/**
 * The limits of `work`: the sandbox's, less the server's reserve (never below a quarter of
 * the sandbox's, so a small sandbox still runs programs). CPU stays the sandbox's quota.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workLimits } from "./cgroup_reserve.ts";
 * assert.deepEqual(workLimits({ cpu: 1, memory: 256, pids: 1024 }), {
 *   cpu: null,
 *   memory: 160,
 *   pids: 960,
 * });
 * assert.deepEqual(workLimits({ cpu: null, memory: null, pids: null }), {
 *   cpu: null,
 *   memory: null,
 *   pids: null,
 * });
 * ```
 */
export function workLimits(limits: Limits): Limits {
  const less = (n: number | null, by: number) =>
    n === null ? null : Math.max(Math.ceil(n / 4), n - by);
  return {
    cpu: null,
    memory: limits.memory === null ? null : less(limits.memory, reservedMemory(limits.memory)),
    pids: less(limits.pids, RESERVED_PIDS),
  };
}

/** The v1 hierarchies `work` is made in. */
export const WORK_CONTROLLERS_V1 = ["pids", "memory"] as const;

/**
 * `work`'s directories: v1 by controller, v2 as `unified`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workDirs } from "./cgroup_reserve.ts";
 * const v2 = { version: 2 as const, dirs: { unified: "/sys/fs/cgroup/sandbar/s1" } };
 * assert.deepEqual(workDirs(v2), { unified: "/sys/fs/cgroup/sandbar/s1/work" });
 * ```
 */
export function workDirs(ref: CgroupRef): Record<string, string> {
  if (ref.version === 2) return { unified: join(ref.dirs.unified, "work") };
  return Object.fromEntries(
    WORK_CONTROLLERS_V1.filter((c) => ref.dirs[c]).map((c) => [c, join(ref.dirs[c], "work")]),
  );
}

/**
 * The descriptors the entering shell opens for the server, and the `SANDBAR_WORK_FDS` value
 * naming them: `procs:` `work`'s `cgroup.procs` files, then on v1 `tasks:` `work`'s `tasks` and
 * `back:` the sandbox cgroup's `tasks`, each in the same order of hierarchies; on v2 with `work`
 * delegated for process trees (`treesInWork`), `home:` the `server` leaf's `cgroup.procs`, by
 * which the server and bubblewrap's init leave `work` (see `tree_delegation.ts`). Descriptors 3 to 9
 * (a POSIX shell's redirections take one digit).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workDescriptorFiles } from "./cgroup_reserve.ts";
 * const v2 = { version: 2 as const, dirs: { unified: "/cg/s1" } };
 * assert.deepEqual(workDescriptorFiles(v2), {
 *   files: [[3, "/cg/s1/work/cgroup.procs"]],
 *   spec: "procs:3",
 * });
 * ```
 */
export function workDescriptorFiles(
  ref: CgroupRef,
  treesInWork = false,
): { files: [number, string][]; spec: string } {
  const work = workDirs(ref);
  const controllers = Object.keys(work);
  const groups: [string, string[]][] = [[
    "procs",
    controllers.map((c) => join(work[c], "cgroup.procs")),
  ]];
  if (ref.version === 1) {
    groups.push(["tasks", controllers.map((c) => join(work[c], "tasks"))]);
    groups.push(["back", controllers.map((c) => join(ref.dirs[c], "tasks"))]);
  } else if (treesInWork) {
    groups.push(["home", [join(ref.dirs.unified, "server", "cgroup.procs")]]);
  }
  const files: [number, string][] = [];
  const spec = groups.map(([name, paths]) => {
    const fds = paths.map((p) => {
      files.push([files.length + 3, p]);
      return files.length + 2;
    });
    return `${name}:${fds.join(",")}`;
  }).join(";");
  return { files, spec };
}

/**
 * Where the sandbox's first process goes: its cgroup on v1 (a v1 cgroup may hold processes and
 * children both), the `server` leaf on v2; or `work` on v2 when `work` is delegated for process
 * trees (`treesInWork`): bubblewrap then roots the sandbox's cgroup namespace there, and its
 * script moves its init and itself to `server` before the server starts (`home:`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { entryDirs } from "./cgroup_reserve.ts";
 * const v2 = { version: 2 as const, dirs: { unified: "/cg/s1" } };
 * assert.deepEqual(entryDirs(v2), ["/cg/s1/server"]);
 * assert.deepEqual(entryDirs(v2, true), ["/cg/s1/work"]);
 * ```
 */
export function entryDirs(ref: CgroupRef, treesInWork = false): string[] {
  if (ref.version === 2) return [join(ref.dirs.unified, treesInWork ? "work" : "server")];
  return [...new Set(Object.values(ref.dirs))];
}
