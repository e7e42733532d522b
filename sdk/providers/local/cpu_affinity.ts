/**
 * Which CPUs a local sandbox may run on, so that `nproc` (and every runtime that sizes its thread
 * pools by the CPUs it may use: Go, Node's `availableParallelism`, Python's `sched_getaffinity`,
 * Deno) sees the sandbox's `cpu`, not the host's count.
 *
 * A sandbox with `cpu: n` gets an affinity of ⌈n⌉ CPUs, those the fewest other sandboxes run on
 * (their affinity read from the first process of each sibling cgroup), so sandboxes spread over
 * the host. The quota (`cpu.cfs_quota_us` / `cpu.max`) still enforces the size; the affinity only
 * says it, and a program inside may widen its own (`taskset`) without getting more CPU time.
 * Where `n` covers every CPU this process may use, nothing is set.
 *
 * @module
 */

import { join } from "node:path";

/**
 * A CPU list as Linux writes it (`0-3,6`), as numbers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCpuList } from "./cpu_affinity.ts";
 * assert.deepEqual(parseCpuList("0-2,5"), [0, 1, 2, 5]);
 * assert.deepEqual(parseCpuList(""), []);
 * ```
 */
export function parseCpuList(text: string): number[] {
  const cpus: number[] = [];
  for (const part of text.trim().split(",").filter(Boolean)) {
    const [a, b] = part.split("-").map(Number);
    for (let c = a; c <= (b ?? a); c++) cpus.push(c);
  }
  return cpus;
}

/**
 * The `count` CPUs of `allowed` the fewest sandboxes use (`used`: CPU → sandboxes on it), ties
 * to the lower number; null when `count` covers them all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { leastUsedCpus } from "./cpu_affinity.ts";
 * assert.deepEqual(leastUsedCpus([0, 1, 2, 3], new Map([[0, 2], [1, 1]]), 2), [2, 3]);
 * assert.equal(leastUsedCpus([0, 1], new Map(), 2), null);
 * ```
 */
export function leastUsedCpus(
  allowed: number[],
  used: Map<number, number>,
  count: number,
): number[] | null {
  if (count >= allowed.length) return null;
  return [...allowed]
    .sort((a, b) => (used.get(a) ?? 0) - (used.get(b) ?? 0) || a - b)
    .slice(0, count)
    .sort((a, b) => a - b);
}

function read(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** The `Cpus_allowed_list` of process `pid` (`self` for this one), or null. */
function allowedOf(pid: number | "self"): number[] | null {
  const m = /^Cpus_allowed_list:\s*(\S+)$/m.exec(read(`/proc/${pid}/status`) ?? "");
  return m ? parseCpuList(m[1]) : null;
}

/**
 * The CPUs for a new sandbox of `cores` whose cgroup's siblings are in `parent` (the `sandbar`
 * directory of the hierarchy that lists processes), or null to leave the affinity alone.
 */
export function chooseCpus(cores: number, parent: string, self: string): number[] | null {
  const allowed = allowedOf("self");
  if (allowed === null) return null;
  const used = new Map<number, number>();
  let siblings: Deno.DirEntry[] = [];
  try {
    siblings = [...Deno.readDirSync(parent)].filter((e) => e.isDirectory && e.name !== self);
  } catch { /* the first sandbox */ }
  for (const sibling of siblings) {
    // v2: a sandbox's processes are in its `server` and `work` leaves (`cgroup_reserve.ts`).
    const procs = read(join(parent, sibling.name, "cgroup.procs")) ||
      read(join(parent, sibling.name, "server", "cgroup.procs")) || "";
    const first = Number(procs.split("\n")[0]);
    const cpus = first > 0 ? allowedOf(first) : null;
    if (cpus === null || cpus.length >= allowed.length) continue;
    for (const c of cpus) used.set(c, (used.get(c) ?? 0) + 1);
  }
  return leastUsedCpus(allowed, used, Math.ceil(cores));
}
