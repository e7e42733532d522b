/**
 * Processes of a local sandbox, read from `/proc`: whether a recorded process is still the
 * same one (pid and start time, so a reused pid is never mistaken for it), the whole tree under
 * a process, and signalling that tree (pause, resume, kill). It is the one `/proc` reader of the
 * host side: the tests read processes through it too (`tests/helpers/proc.ts`). (The server
 * reads `/proc` through libc, `server/pty/procfs.ts`, since its narrowed permissions do not
 * let Deno's file API near `/proc`.)
 *
 * @module
 */

/** A process as recorded in a sandbox's state file. */
export interface ProcessRef {
  /** Process id. */
  pid: number;
  /** Start time in clock ticks since boot (`/proc/<pid>/stat` field 22). */
  start: number;
}

/** The fields of `/proc/<pid>/stat` the SDK and the tests read. */
export interface ProcStat {
  /** Process id. */
  pid: number;
  /** `R`, `S`, `Z` … */
  state: string;
  /** The parent's pid. */
  ppid: number;
  /** The process group. */
  pgrp: number;
  /** The session. */
  sid: number;
  /** Start time in clock ticks since boot. */
  start: number;
}

type Stat = ProcStat;

/** Deno reads `/proc` only with `--allow-all`; without it nothing here can be known. */
export class ProcUnreadable extends Error {}

/**
 * The stat of `pid`, or null when there is no such process. Throws {@linkcode ProcUnreadable}
 * when `/proc` cannot be read at all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { procStat } from "./procfs.ts";
 * assert.equal(procStat(Deno.pid)?.pid, Deno.pid);
 * ```
 */
export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      throw new ProcUnreadable(`cannot read /proc: ${(e as Error).message}`);
    }
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  const close = text.lastIndexOf(")");
  const rest = text.slice(close + 2).split(" ");
  return {
    pid,
    state: rest[0],
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    sid: Number(rest[3]),
    start: Number(rest[19]),
  };
}

/**
 * The reference of a running process, or null when there is none with that pid.
 *
 * @example
 * ```ts
 * import { processRef } from "./procfs.ts";
 * processRef(Deno.pid)?.pid === Deno.pid; // true
 * ```
 */
export function processRef(pid: number): ProcessRef | null {
  const s = procStat(pid);
  return s && s.state !== "Z" ? { pid, start: s.start } : null;
}

/** Whether this process may read `/proc` (Deno needs `--allow-all` for it). */
export function procReadable(): boolean {
  try {
    procStat(Deno.pid);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the recorded process still runs (same pid, same start time, not a zombie). Throws
 * {@linkcode ProcUnreadable} when `/proc` cannot be read.
 */
export function isAlive(ref: ProcessRef | undefined): boolean {
  if (!ref) return false;
  const s = procStat(ref.pid);
  return s !== null && s.start === ref.start && s.state !== "Z";
}

/** Every pid in `/proc` now. */
export function allPids(): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (/^\d+$/.test(entry.name)) pids.push(Number(entry.name));
  }
  return pids;
}

function allStats(): Stat[] {
  const stats: Stat[] = [];
  for (const pid of allPids()) {
    const s = procStat(pid);
    if (s) stats.push(s);
  }
  return stats;
}

/** The command line of `pid` (NUL-separated, as the kernel gives it), or null when it is gone. */
export function procCmdline(pid: number): string | null {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`);
  } catch {
    return null;
  }
}

/** The pids of `pid`'s children (every thread's), or none when it is gone. */
export function childPids(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      const text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
      if (text) found.push(...text.split(/\s+/).map(Number));
    }
  } catch { /* gone */ }
  return found;
}

/** Every live descendant of `root` (not `root` itself), parents before children. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const s of allStats()) {
    if (s.state === "Z") continue;
    const list = children.get(s.ppid) ?? [];
    list.push(s.pid);
    children.set(s.ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    for (const child of children.get(pid) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

function send(pid: number, signal: Deno.Signal): boolean {
  try {
    Deno.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Send `signal` to every descendant of `root`. For `SIGSTOP` the tree is scanned again until no
 * new process shows up, so a process forked while the first ones were being stopped is stopped
 * too. Returns the pids signalled.
 */
export function signalTree(root: number, signal: Deno.Signal): number[] {
  const done = new Set<number>();
  for (let round = 0; round < 20; round++) {
    const fresh = descendants(root).filter((pid) => !done.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      send(pid, signal);
      done.add(pid);
    }
    if (signal !== "SIGSTOP" && signal !== "SIGKILL") break;
  }
  return [...done];
}

/**
 * Kill a recorded process (when it is still the same one) and everything under it. Does
 * nothing when `/proc` cannot be read: without the start time, a reused pid could be hit.
 */
export function killTree(ref: ProcessRef | undefined): void {
  if (!ref || !procReadable() || !isAlive(ref)) return;
  // Stop the parent first so it cannot start more, then kill downwards.
  send(ref.pid, "SIGSTOP");
  signalTree(ref.pid, "SIGKILL");
  send(ref.pid, "SIGKILL");
}
