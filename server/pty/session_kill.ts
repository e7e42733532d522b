/**
 * Ending everything a terminal started. A shell with job control puts each job in its own
 * process group, so killing the shell's group would miss them; what they all share is the
 * session the shell leads. The members are found by scanning `/proc/<pid>/stat` (through libc:
 * see `./procfs.ts`).
 *
 * @module
 */

import { listProcessIds, readProcFile } from "./procfs.ts";

/** Process ids of the live (not zombie) members of a session. */
export function sessionMembers(sid: number): number[] {
  const members: number[] = [];
  for (const pid of listProcessIds()) {
    const stat = readProcFile(`/proc/${pid}/stat`);
    if (stat === undefined) continue; // exited meanwhile
    // pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") continue;
    if (Number(fields[3]) === sid) members.push(pid);
  }
  return members;
}

function signalAll(pids: number[], signal: Deno.Signal): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, signal);
    } catch { /* gone already */ }
  }
}

/**
 * Hang up a session: `SIGHUP` (and `SIGCONT`, so stopped jobs see it) to every member, then
 * `SIGKILL` to what is left after `graceMs`. Resolves when no live member remains.
 */
export async function hangUpSession(sid: number, graceMs: number): Promise<void> {
  let members = sessionMembers(sid);
  if (members.length === 0) return;
  signalAll(members, "SIGHUP");
  signalAll(members, "SIGCONT");
  const deadline = Date.now() + graceMs;
  let wait = 2;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 50);
    members = sessionMembers(sid);
    if (members.length === 0) return;
  }
  // SIGKILL until none is left: a member may fork between a scan and the signal.
  for (let round = 0; round < 50; round++) {
    members = sessionMembers(sid);
    if (members.length === 0) return;
    signalAll(members, "SIGKILL");
    await new Promise((r) => setTimeout(r, 10));
  }
}
