/**
 * What the tests read of processes from the host's `/proc`: a process's state and parents, every
 * pid, and the narrowed server behind a test server's launcher.
 *
 * @module
 */

import type { TestServer } from "./server.ts";

/** `/proc/<pid>/stat` fields after the command name. */
export interface ProcStat {
  /** `R`, `S`, `Z` … */
  state: string;
  /** The parent's pid. */
  ppid: number;
  /** The process group. */
  pgrp: number;
  /** The session. */
  sid: number;
}

/** The stat of `pid`, or null when it is gone. */
export function procStat(pid: number): ProcStat | null {
  try {
    const s = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), sid: Number(f[3]) };
  } catch {
    return null;
  }
}

/** Every pid in `/proc` now. */
export function allPids(): number[] {
  return [...Deno.readDirSync("/proc")].filter((e) => /^\d+$/.test(e.name)).map((e) =>
    Number(e.name)
  );
}

/** The narrowed server: the child of the test server's launcher. */
export function serverPid(server: TestServer): number {
  const pid = allPids().find((p) => procStat(p)?.ppid === server.pid);
  if (pid === undefined) throw new Error("no server process");
  return pid;
}
