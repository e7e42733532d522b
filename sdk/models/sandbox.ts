/**
 * Models of a sandbox's lifecycle: {@linkcode SandboxStatus} and {@linkcode SandboxInfo}.
 *
 * @module
 */

/**
 * The states of a sandbox. The member names are the upper-case forms of the values.
 *
 * - `creating`: the provider is starting it.
 * - `running`: it answers.
 * - `paused`: every process in it is frozen (its cgroup's freezer under the local provider) and
 *   its lifetime does not run down; its files are kept even if its host restarts (processes are
 *   not: `resume` then starts a fresh server on them).
 * - `stopping`: a kill is under way.
 * - `stopped`: killed, or its lifetime ran out; nothing of it is left.
 * - `error`: it failed to start or its server died; it is being cleaned up.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SandboxStatus } from "@sandbar/sandbar/sdk";
 * assert.equal(SandboxStatus.RUNNING, "running");
 * ```
 */
export const SandboxStatus = {
  /** The provider is starting it. */
  CREATING: "creating",
  /** It answers. */
  RUNNING: "running",
  /** Every process in it is stopped. */
  PAUSED: "paused",
  /** A kill is under way. */
  STOPPING: "stopping",
  /** Gone. */
  STOPPED: "stopped",
  /** Failed to start, or its server died. */
  ERROR: "error",
} as const;

/** One of the {@linkcode SandboxStatus} values. */
export type SandboxStatus = typeof SandboxStatus[keyof typeof SandboxStatus];

/** Every status value, for validation. */
export const SANDBOX_STATUSES: readonly SandboxStatus[] = Object.values(SandboxStatus);

/** What a provider reports about one sandbox. */
export interface SandboxInfo {
  /** The sandbox id. */
  sandboxId: string;
  /** The template it was created from. */
  template: string;
  /** Its status when this was read. */
  status: SandboxStatus;
  /** The data-plane URL (the in-sandbox server, port 9000), or null when there is none. */
  envdUrl: string | null;
  /**
   * The data-plane access token (sent as `X-Access-Token` in secure mode), or null. `list()`
   * leaves it out; `connect()` and `refreshInfo()` carry it.
   */
  envdAccessToken: string | null;
  /** User metadata given at creation. */
  metadata: Record<string, string>;
  /** When it was created. */
  startedAt: Date | null;
  /** When its lifetime ends (`timeout` after creation, or as `setTimeout` last set it). */
  endAt: Date | null;
  /** The provider's name (`local`, …). */
  provider: string;
  /** CPU cores asked for at creation, or null. */
  cpuCount: number | null;
  /** Memory in MB asked for at creation, or null. */
  memoryMB: number | null;
  /** Disk in MB asked for at creation, or null. */
  diskMB: number | null;
  /**
   * How it is isolated, where the provider says (`local`: `bwrap`, or `none`: no isolation, Deno
   * permissions only).
   */
  isolation?: string;
  /**
   * Processes of the sandbox the kernel killed for want of memory so far (`local`, where the
   * sandbox has a cgroup); each is also an `oom_kill` event (`getEvents()`).
   */
  oomKills?: number;
}

/** Something that happened to a sandbox (`Sandbox.getEvents()`). */
export interface SandboxEvent {
  /** `oom_kill`: the kernel killed a process of it for want of memory. */
  type: string;
  /** When it was seen. */
  at: Date;
  /** What happened, in words. */
  message: string;
}

/**
 * A sandbox's use of its sizes now (`Sandbox.getMetrics()`; E2B's fields and more), read from its
 * cgroup and its file system. Null where the provider cannot tell or no limit is in force.
 */
export interface SandboxMetrics {
  /** When it was read. */
  timestamp: Date;
  /** The CPU quota in cores, or null when unlimited. */
  cpuCount: number | null;
  /** CPU used over the last second, in percent of the quota (of one core when unlimited). */
  cpuUsedPct: number | null;
  /** CPU time used since it started, in seconds. */
  cpuUsedSeconds: number | null;
  /** Memory in use (swap included where accounted), bytes. */
  memUsed: number | null;
  /** The memory limit, bytes. */
  memTotal: number | null;
  /** Bytes written to its disk. */
  diskUsed: number | null;
  /** The disk cap, bytes. */
  diskTotal: number | null;
  /** Processes and threads in it now. */
  processes: number | null;
  /** The process limit. */
  processLimit: number | null;
  /** Processes killed for want of memory so far. */
  oomKills: number;
}
