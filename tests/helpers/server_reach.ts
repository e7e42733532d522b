/**
 * What tests run inside a sandbox to check that its commands cannot reach the server, on either
 * provider (`local_server_reach_test.ts`, `docker_server_reach_test.ts`): a connect to each of
 * the server's abstract sockets, and a command listening on 127.0.0.1:9000 and 9001 while the
 * client uses every path it has to the server.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { CommandHandle, Sandbox } from "../../sdk/mod.ts";

/** Connect to each abstract `@name` given: `connected`, or `refused <errno>`. */
const CONNECT_ABSTRACT = `
import socket, sys
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\\0" + name[1:])
        print(name[-4:], "connected")
    except OSError as e:
        print(name[-4:], "refused", e.errno)
`;

/** Listen on 127.0.0.1:9000 and 9001 and print each connection that comes. */
const SQUAT = `
import socket, select
ls = []
for port in (9000, 9001):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port))
    l.listen()
    ls.append(l)
print("listening", flush=True)
while True:
    for l in select.select(ls, [], [])[0]:
        c, _ = l.accept()
        print("got a connection on", l.getsockname()[1], flush=True)
        c.close()
`;

/**
 * The server's two listening sockets as a command sees them in `/proc/net/unix` (names drawn at
 * random, for 9000 and 9001), and a command's `connect` to each refused by the kernel (EPERM).
 */
export async function assertSocketsRefused(sandbox: Sandbox): Promise<void> {
  const listed = await sandbox.commands.run(
    // Listening sockets (state 01, flag __SO_ACCEPTCON) of the server, by name.
    "awk '$6 == \"01\" && $8 ~ /^@sandbar-/ { print $8 }' /proc/net/unix | sort -t- -k3",
  );
  const names = listed.stdout.trim().split("\n");
  assert.equal(names.length, 2, listed.stdout);
  assert.match(names[0], /^@sandbar-[0-9a-f]{32}-9000$/);
  assert.match(names[1], /^@sandbar-[0-9a-f]{32}-9001$/);
  await sandbox.files.write("/tmp/connect.py", CONNECT_ABSTRACT);
  const tried = await sandbox.commands.run(`python3 /tmp/connect.py ${names.join(" ")}`);
  assert.equal(tried.stdout, "9000 refused 1\n9001 refused 1\n", tried.stderr); // EPERM
}

/**
 * A command listening on 127.0.0.1:9000 and 9001 (nothing of the server is on TCP, so it may),
 * once it listens; {@linkcode assertSquatterGotNothing} checks it after, and the caller kills it.
 */
export async function startSquatter(sandbox: Sandbox): Promise<CommandHandle> {
  await sandbox.files.write("/tmp/squat.py", SQUAT);
  const squatter = await sandbox.commands.run("python3 /tmp/squat.py > /tmp/squat.log 2>&1", {
    background: true,
    timeout: 0,
  });
  const started = await sandbox.commands.run(
    "for i in $(seq 50); do grep -q listening /tmp/squat.log && break; sleep 0.1; done; " +
      "cat /tmp/squat.log",
  );
  assert.equal(started.stdout, "listening\n");
  return squatter;
}

/** The client's paths to the server: commands, files, a terminal over the PTY WebSocket. */
export async function useEveryPath(sandbox: Sandbox): Promise<void> {
  assert.equal((await sandbox.commands.run("echo hi")).stdout, "hi\n");
  await sandbox.files.write("note.txt", "kept");
  assert.equal(await sandbox.files.read("note.txt"), "kept");
  await using terminal = await sandbox.getTerminal();
  terminal.send("echo pty-$((6*7))\n");
  assert.match(await terminal.expect(/pty-42/), /pty-42/);
}

/** The squatter received none of the requests: its log has only its listening line. */
export async function assertSquatterGotNothing(sandbox: Sandbox): Promise<void> {
  const log = await sandbox.commands.run("cat /tmp/squat.log");
  assert.equal(log.stdout, "listening\n", "the command received none of the requests");
}
