/**
 * The server's own cgroup limits, for `system_metrics`: inside a local sandbox (or any container)
 * the machine's totals in `/proc` are the host's, while what the server's processes may use is
 * set by its cgroup. The cgroup is found as a container sees it: `/proc/self/cgroup` names the
 * path (`/` inside a cgroup namespace) under `/sys/fs/cgroup/<controller>` (v1) or
 * `/sys/fs/cgroup` (v2), where the local provider binds the sandbox's own cgroup read-only.
 *
 * @module
 */

import { libcAvailable } from "../../libc/index.ts";
import { readProcFile } from "../../pty/procfs.ts";
import { procFiles } from "./machine.ts";
import type { SystemTools } from "./tools.ts";

/** Limits in force and use, from the cgroup. */
export interface CgroupLimits {
  /** `cgroup v1` or `cgroup v2`. */
  source: string;
  /** The CPU quota in cores, or null when none. */
  cpu_cores: number | null;
  /** The memory limit in bytes (swap included where accounted), or null when none. */
  memory_bytes: number | null;
  /** Memory in use by the cgroup, bytes. */
  memory_used_bytes: number | null;
  /** The process (and thread) limit, or null when none. */
  pids: number | null;
  /** Processes and threads in the cgroup now. */
  pids_current: number | null;
}

/**
 * The files to read for the cgroup of the process that reads `/proc/self/cgroup` text. A path
 * outside the reader's cgroup namespace (`/..`: a local sandbox's server on cgroup v2, whose
 * namespace is rooted at the programs' `work` cgroup beside it) reads the mount's top, which is
 * the container's own cgroup as bound there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupFiles } from "./cgroup_limits.ts";
 * assert.equal(cgroupFiles("0::/\n").memoryMax, "/sys/fs/cgroup/memory.max");
 * assert.equal(cgroupFiles("0::/../server\n").memoryMax, "/sys/fs/cgroup/memory.max");
 * assert.equal(cgroupFiles("0::/a/b\n").memoryMax, "/sys/fs/cgroup/a/b/memory.max");
 * ```
 */
export function cgroupFiles(selfCgroup: string | undefined): Record<string, string> {
  const paths = new Map<string, string>();
  for (const line of (selfCgroup ?? "").split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const path = m[2] === "/.." || m[2].startsWith("/../") ? "" : m[2].replace(/\/$/, "");
    for (const c of m[1].split(",")) paths.set(c, path);
  }
  const v1 = (c: string, file: string) =>
    paths.has(c) ? `/sys/fs/cgroup/${c}${paths.get(c)}/${file}` : "";
  const v2 = (file: string) => paths.has("") ? `/sys/fs/cgroup${paths.get("")}/${file}` : "";
  const files: Record<string, string> = {
    quota: v1("cpu", "cpu.cfs_quota_us"),
    period: v1("cpu", "cpu.cfs_period_us"),
    usage: v1("cpuacct", "cpuacct.usage"),
    memsw: v1("memory", "memory.memsw.limit_in_bytes"),
    memory: v1("memory", "memory.limit_in_bytes"),
    memswUsed: v1("memory", "memory.memsw.usage_in_bytes"),
    memoryUsed: v1("memory", "memory.usage_in_bytes"),
    pids: v1("pids", "pids.max"),
    pidsCurrent: v1("pids", "pids.current"),
    cpuMax: v2("cpu.max"),
    cpuStat: v2("cpu.stat"),
    memoryMax: v2("memory.max"),
    memoryCurrent: v2("memory.current"),
    pidsMax: v2("pids.max"),
    pidsCurrent2: v2("pids.current"),
  };
  return Object.fromEntries(Object.entries(files).filter(([, p]) => p !== ""));
}

const UNLIMITED = 2 ** 62;

function num(text: string | undefined): number | null {
  if (text === undefined || text.trim() === "max") return null;
  const n = Number(text.trim());
  return Number.isFinite(n) && n >= 0 && n < UNLIMITED ? n : null;
}

/** CPU time used by the cgroup in microseconds, from the values read by `cgroupFiles`. */
export function cpuUsageUs(values: Record<string, string | undefined>): number | null {
  const ns = num(values.usage);
  if (ns !== null) return ns / 1000;
  const m = /^usage_usec (\d+)$/m.exec(values.cpuStat ?? "");
  return m ? Number(m[1]) : null;
}

/** The limits in the values read, or null when the cgroup sets none. */
export function parseLimits(values: Record<string, string | undefined>): CgroupLimits | null {
  const v2 = values.cpuMax !== undefined || values.memoryMax !== undefined;
  let cpu: number | null = null;
  if (values.cpuMax) {
    const [q, p] = values.cpuMax.trim().split(" ");
    cpu = q === "max" ? null : Number(q) / Number(p);
  } else {
    const q = num(values.quota);
    const p = num(values.period);
    cpu = q !== null && p ? q / p : null;
  }
  const memory = v2 ? num(values.memoryMax) : num(values.memsw) ?? num(values.memory);
  const pids = num(v2 ? values.pidsMax : values.pids);
  if (cpu === null && memory === null && pids === null) return null;
  return {
    source: v2 ? "cgroup v2" : "cgroup v1",
    cpu_cores: cpu,
    memory_bytes: memory,
    memory_used_bytes: v2 ? num(values.memoryCurrent) : num(values.memswUsed) ??
      num(values.memoryUsed),
    pids,
    pids_current: num(v2 ? values.pidsCurrent2 : values.pidsCurrent),
  };
}

/** Read the server's cgroup files: the values by name, and the files (see `cgroupFiles`). */
export async function readCgroup(tools: SystemTools): Promise<{
  values: Record<string, string | undefined>;
  files: Record<string, string>;
}> {
  // The server's own cgroup, read here where libc is at hand: a helper's may be another (in a
  // local sandbox, the programs' `work` cgroup below the sandbox's).
  const own = libcAvailable() ? readProcFile("/proc/self/cgroup") : undefined;
  const self = own ?? (await procFiles(["/proc/self/cgroup"], tools)).get("/proc/self/cgroup");
  const files = cgroupFiles(self);
  const text = await procFiles(Object.values(files), tools);
  return {
    values: Object.fromEntries(Object.entries(files).map(([k, p]) => [k, text.get(p)])),
    files,
  };
}
