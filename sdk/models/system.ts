/**
 * Models of the system group.
 *
 * @module
 */

/** Disk usage of the file system holding the server's root. */
export interface DiskUsage {
  /** The path measured. */
  path: string;
  /** Bytes in total. */
  totalBytes: number;
  /** Bytes used. */
  usedBytes: number;
  /** Bytes available. */
  availableBytes: number;
  /** Percent used (metrics only). */
  percent?: number;
}

/** `system.info()`: what the sandbox is. */
export interface SystemInfo {
  /** Operating system. */
  os: { name: string; prettyName: string | null; release: string; version: string };
  /** CPU architecture (`x86_64`). */
  arch: string;
  /** Host name. */
  hostname: string;
  /** CPUs. */
  cpus: { count: number; model: string | null };
  /** Memory in bytes. */
  memory: { totalBytes: number; availableBytes: number };
  /** Disk of the server's root. */
  disk: DiskUsage;
  /** Seconds since boot. */
  uptimeSeconds: number;
  /** The user the server runs as. */
  user: { uid: number; gid: number; name: string | null; home: string | null };
  /** The server's root directory. */
  root: string;
  /** Versions of the server and of tools (null when not installed). */
  versions: Record<string, string | null>;
}

/** `system.metrics()`: usage at the time of the request. */
export interface SystemMetrics {
  /** When it was measured. */
  timestamp: string;
  /** CPU busy percentages over a 100 ms sample. */
  cpu: {
    count: number;
    percent: number;
    userPercent: number;
    systemPercent: number;
    iowaitPercent: number;
  };
  /**
   * The limits of the server's cgroup (a local sandbox's sizes), or null where none is set; where
   * set, `cpu.count`, `cpu.percent`, `memory` and `processes.total` are the cgroup's.
   */
  limits?: {
    source: string;
    cpuCores: number | null;
    memoryBytes: number | null;
    memoryUsedBytes: number | null;
    pids: number | null;
    pidsCurrent: number | null;
  } | null;
  /** Memory in bytes. */
  memory: {
    totalBytes: number;
    availableBytes: number;
    usedBytes: number;
    percent: number;
    swapTotalBytes: number;
    swapFreeBytes: number;
  };
  /** Disk of the server's root. */
  disk: DiskUsage;
  /** Load averages (`1m`, `5m`, `15m`). */
  load: Record<string, number>;
  /** Process counts. */
  processes: { running: number; total: number };
  /** Seconds since boot. */
  uptimeSeconds: number;
}

/** A listening TCP port (`system.ports()`), as the server describes it. */
export type { ListeningPort } from "../../server/handlers/system/ports.ts";

/** One installed package. */
export interface InstalledPackage {
  /** `deb`, `pip` or `npm`. */
  manager: string;
  /** Package name. */
  name: string;
  /** Installed version. */
  version: string;
}

/** `system.packages()`. */
export interface PackageList {
  /** Packages, sorted by manager then name. */
  packages: InstalledPackage[];
  /** Per manager: whether present and how many matched. */
  managers: Record<string, { present: boolean; count: number }>;
  /** True when `packages` was cut at `limit`. */
  truncated: boolean;
}
