// 200 terminals created and deleted against the real server leave no process and no open
// descriptor behind: counted in the real server process (the launcher's child), from /proc.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

const CYCLES = 200;

/** The real server: the launcher's only child. */
function realServerPid(launcher: number): number {
  const children = Deno.readTextFileSync(`/proc/${launcher}/task/${launcher}/children`)
    .trim().split(/\s+/).filter(Boolean).map(Number);
  assert.equal(children.length, 1, `launcher children: ${children}`);
  return children[0];
}

/** The server's open descriptors, as `fd -> target`. */
function openDescriptors(pid: number): Map<string, string> {
  const fds = new Map<string, string>();
  for (const e of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      fds.set(e.name, Deno.readLinkSync(`/proc/${pid}/fd/${e.name}`));
    } catch { /* closed while listing */ }
  }
  return fds;
}

/** Every descendant of `pid` (zombies included: a zombie is a leak too). */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    let kids: number[] = [];
    try {
      kids = Deno.readTextFileSync(`/proc/${p}/task/${p}/children`).trim().split(/\s+/)
        .filter(Boolean).map(Number);
    } catch { /* gone */ }
    for (const k of kids) {
      out.push(k);
      visit(k);
    }
  };
  visit(pid);
  return out;
}

/** Live processes whose session is one of `sids`. */
function inSessions(sids: Set<number>): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (f[0] !== "Z" && sids.has(Number(f[3]))) out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

/** Descriptors open after but not before; sockets are counted, not matched, since the
 * client's keep-alive pool may replace a connection by another on a different number. */
function leaked(before: Map<string, string>, after: Map<string, string>): string[] {
  const isSocket = (t: string) => t.startsWith("socket:");
  const sockets = (m: Map<string, string>) => [...m.values()].filter(isSocket).length;
  const out = [...after]
    .filter(([fd, target]) => !isSocket(target) && before.get(fd) !== target)
    .map(([fd, target]) => `${fd} -> ${target}`);
  if (sockets(after) > sockets(before)) out.push(`${sockets(after) - sockets(before)} sockets`);
  return out;
}

Deno.test(`${CYCLES} create/delete cycles leave no process and no descriptor`, async () => {
  await using server = await startTestServer();
  const pid = realServerPid(server.pid);
  const cycle = async (body: Record<string, unknown>): Promise<number> => {
    const res = await server.fetch("/pty", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const t = await res.json();
    assert.equal(res.status, 201, JSON.stringify(t));
    const del = await server.fetch(`/pty/${t.id}`, { method: "DELETE" });
    const final = await del.json();
    assert.equal(del.status, 200, JSON.stringify(final));
    assert.equal(final.status, "exited");
    return t.pid;
  };
  // Warm up with the same parallelism: the first terminal loads libc and starts the service,
  // and the client's keep-alive pool opens its four connections to the server.
  const busy = { shell: "/bin/bash", args: ["-c", "sleep 100 & sleep 100"] };
  for (let i = 0; i < 2; i++) await Promise.all([cycle({}), cycle(busy), cycle({}), cycle(busy)]);
  const fdsBefore = openDescriptors(pid);
  const sids = new Set<number>();
  // `busy` is bash with a background job and a foreground one: the whole session must go.
  for (let i = 0; i < CYCLES; i += 4) {
    const pids = await Promise.all([cycle({}), cycle(busy), cycle({ cols: 200 }), cycle(busy)]);
    for (const p of pids) sids.add(p);
  }
  assert.equal(sids.size, CYCLES);
  assert.deepEqual(inSessions(sids), [], "processes of deleted terminals are still alive");
  assert.deepEqual(descendants(pid), [], "the server still has children (or zombies)");
  const fdsAfter = openDescriptors(pid);
  assert.deepEqual(leaked(fdsBefore, fdsAfter), [], "descriptors opened and not closed");
  assert.ok(
    fdsAfter.size <= fdsBefore.size,
    `${fdsBefore.size} fds before, ${fdsAfter.size} after`,
  );
  assert.ok(
    ![...fdsAfter.values()].some((t) => t.startsWith("/dev/pts/") || t === "/dev/ptmx"),
    "a terminal descriptor is still open",
  );
  const list = await (await server.fetch("/pty")).json();
  assert.deepEqual(list.terminals, []);
});
