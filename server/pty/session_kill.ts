/**
 * Ending everything a terminal started. A shell with job control puts each job in its own
 * process group, so killing the shell's group would miss them; what they all share is the
 * session the shell leads. The members are found by scanning `/proc/<pid>/stat`.
 *
 * @module
 */

/** Process ids of the live (not zombie) members of a session. */
export function sessionMembers(sid: number): number[] {
  const members: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") continue;
    if (Number(fields[3]) === sid) members.push(Number(entry.name));
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
 *
 * @example
 * ```ts ignore
 * await hangUpSession(shell.pid, 2000);
 * ```
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
