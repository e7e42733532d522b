/**
 * `GET /system/metrics`: CPU, memory, disk, load and processes, from `/proc` at request time.
 * CPU use is measured over a 100 ms sample taken by the request.
 *
 * Where the server's cgroup sets limits (a local sandbox, a container), they are what the server's
 * processes have, so they replace the host's totals: `cpu.count` is the CPU quota in cores and
 * `cpu.percent` the cgroup's use of it, `memory` the cgroup's limit and use, `processes.total`
 * the cgroup's count; `limits` says so (null where no cgroup limit is set).
 *
 * @module
 */

import type { EndpointHandler } from "../../pipeline/handler.ts";
import { systemTools } from "./tools.ts";
import { cpuUsageUs, parseLimits, readCgroup } from "./cgroup_limits.ts";
import {
  diskUsage,
  parseCpuTimes,
  parseMemInfo,
  parseUptime,
  procFiles,
  round,
} from "./machine.ts";

const SAMPLE_MS = 100;

/** Busy shares between two `/proc/stat` samples (user, nice, system, idle, iowait, …). */
function cpuPercent(a: number[] | null, b: number[] | null) {
  if (!a || !b) {
    return { percent: null, user_percent: null, system_percent: null, iowait_percent: null };
  }
  const d = b.map((v, i) => v - (a[i] ?? 0));
  const total = d.reduce((s, v) => s + v, 0);
  if (total <= 0) return { percent: 0, user_percent: 0, system_percent: 0, iowait_percent: 0 };
  const idle = (d[3] ?? 0) + (d[4] ?? 0);
  const pct = (n: number) => round((100 * n) / total);
  return {
    percent: pct(total - idle),
    user_percent: pct((d[0] ?? 0) + (d[1] ?? 0)),
    system_percent: pct((d[2] ?? 0) + (d[5] ?? 0) + (d[6] ?? 0)),
    iowait_percent: pct(d[4] ?? 0),
  };
}

/** `GET /system/metrics`. */
export const metrics: EndpointHandler = async (c) => {
  const state = c.var.state;
  const tools = systemTools(state);
  const PROC = ["/proc/stat", "/proc/meminfo", "/proc/loadavg", "/proc/uptime"];
  const [proc, disk, cgroup] = await Promise.all([
    procFiles(PROC, tools),
    diskUsage(state.root, tools),
    readCgroup(tools),
  ]);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SAMPLE_MS));
  const usageFile = cgroup.files.usage ?? cgroup.files.cpuStat;
  const again = await procFiles(["/proc/stat", ...(usageFile ? [usageFile] : [])], tools);
  const elapsedUs = (performance.now() - t0) * 1000;
  const before = parseCpuTimes(proc.get("/proc/stat"));
  const after = parseCpuTimes(again.get("/proc/stat"));
  const limits = parseLimits(cgroup.values);
  const mem = parseMemInfo(proc.get("/proc/meminfo"));
  const uptime = parseUptime(proc.get("/proc/uptime"));
  const loadavg = proc.get("/proc/loadavg");
  const load = loadavg?.trim().split(/\s+/) ?? [];
  const [running, total] = (load[3] ?? "").split("/").map(Number);
  let memTotal = mem.MemTotal ?? 0;
  let available = mem.MemAvailable ?? 0;
  if (limits?.memory_bytes != null && limits.memory_bytes < memTotal) {
    memTotal = limits.memory_bytes;
    available = Math.max(0, memTotal - (limits.memory_used_bytes ?? 0));
  }
  const cpu = { count: navigator.hardwareConcurrency, ...cpuPercent(before, after) };
  if (limits?.cpu_cores != null) {
    cpu.count = limits.cpu_cores;
    const [a, b] = [
      cpuUsageUs(cgroup.values),
      cpuUsageUs({
        ...cgroup.values,
        usage: again.get(cgroup.files.usage),
        cpuStat: again.get(cgroup.files.cpuStat),
      }),
    ];
    if (a !== null && b !== null && elapsedUs > 0) {
      cpu.percent = round(Math.min(100, (100 * (b - a)) / (elapsedUs * limits.cpu_cores)));
    }
  }
  return c.json({
    timestamp: new Date().toISOString(),
    cpu,
    limits,
    memory: {
      total_bytes: memTotal,
      available_bytes: available,
      used_bytes: memTotal - available,
      percent: memTotal > 0 ? round((100 * (memTotal - available)) / memTotal) : 0,
      swap_total_bytes: mem.SwapTotal ?? 0,
      swap_free_bytes: mem.SwapFree ?? 0,
    },
    disk,
    load: { "1m": Number(load[0] ?? 0), "5m": Number(load[1] ?? 0), "15m": Number(load[2] ?? 0) },
    processes: {
      running: Number.isFinite(running) ? running : null,
      total: limits?.pids_current ?? (Number.isFinite(total) ? total : null),
    },
    uptime_seconds: uptime,
  });
};
