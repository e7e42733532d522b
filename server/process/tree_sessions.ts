/**
 * Ending a process tree without a cgroup (the `session` way of `trees.ts`): `SIGKILL` to the
 * leader's process group, to every process of its session (a double fork or `disown` keeps the
 * session, whoever its parent becomes) and to every process descending from it in `/proc`,
 * repeated until none is left running. What it cannot find: a process that called `setsid` and
 * whose parent had already exited.
 *
 * @module
 */

import { libc } from "../libc/index.ts";
import { listProcessIds, readProcFile } from "../pty/procfs.ts";

const SIGKILL = 9;

interface Stat {
  pid: number;
  zombie: boolean;
  ppid: number;
  pgrp: number;
  session: number;
}

function processTable(): Stat[] {
  const out: Stat[] = [];
  // Through libc: Deno refuses `/proc` paths without `--allow-all` (see `pty/procfs.ts`).
  for (const pid of listProcessIds()) {
    const text = readProcFile(`/proc/${pid}/stat`);
    if (text === undefined) continue;
    // pid (comm) state ppid pgrp session …: comm may hold spaces and parentheses.
    const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
    out.push({
      pid,
      zombie: rest[0] === "Z",
      ppid: +rest[1],
      pgrp: +rest[2],
      session: +rest[3],
    });
  }
  return out;
}

/**
 * `SIGKILL` to the group and session `leader` made, and to everything descending from it, until
 * none is left running (a process may fork while the first round is sent). `reaped`: the
 * leader's pid may belong to another process by now, so only its group and session are followed.
 */
export function endSession(leader: number, reaped: boolean): void {
  const c = libc();
  for (let round = 0; round < 5; round++) {
    const table = processTable();
    // A reaped leader's pid may belong to another process by now: then only its group and
    // session are followed (its children were handed to init when it exited).
    const doomed = new Set<number>(reaped ? [] : [leader]);
    for (const p of table) if (p.pgrp === leader || p.session === leader) doomed.add(p.pid);
    for (let grew = !reaped; grew;) {
      grew = false;
      for (const p of table) {
        if (!doomed.has(p.pid) && doomed.has(p.ppid)) {
          doomed.add(p.pid);
          grew = true;
        }
      }
    }
    doomed.delete(Deno.pid);
    if (reaped) {
      for (const p of table) if (p.pid === leader && p.session !== leader) doomed.delete(p.pid);
    }
    const running = table.filter((p) => doomed.has(p.pid) && !p.zombie);
    if (running.length === 0) return;
    for (const p of running) c.kill(p.pid, SIGKILL);
  }
}
