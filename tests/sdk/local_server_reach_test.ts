/**
 * Nothing a local sandbox runs reaches its server; the client always does. Where the kernel's
 * Landlock scopes abstract sockets (ABI 6) the server listens on two abstract Unix sockets with
 * random names instead of TCP: a command that reads their names from `/proc/net/unix` is refused
 * by the kernel when it connects, and one that listens on 127.0.0.1:9000 and 9001 (free inside
 * now) receives none of the client's requests, commands, files and terminal alike. With
 * `SANDBAR_ABSTRACT_SOCKETS=off` (what a kernel without the scoping gets) the server is on TCP
 * and the same command is refused by Landlock's port rules, for `connect` and `bind` alike.
 */

import assert from "node:assert/strict";
import { Sandbox } from "../../sdk/mod.ts";
import { landlockAbi } from "../../server/confine/landlock.ts";
import { dropSandbarHome, runChild, useSandbarHome } from "./sandbox_helpers.ts";
import { CONNECT_ABSTRACT, SQUAT } from "../helpers/server_reach.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

const python = await new Deno.Command("python3", { args: ["-c", ""] }).output().then(
  (o) => o.success,
  () => false,
);

Deno.test({
  name: "a command cannot connect to the server's abstract sockets, nor take its requests on 9000",
  // Needs python3 (the probes) and Landlock ABI 6 (abstract socket scoping).
  ignore: !python || landlockAbi() < 6,
  fn: async () => {
    await using sandbox = await Sandbox.create();
    const listed = await sandbox.commands.run(
      // Listening sockets (state 01, flag __SO_ACCEPTCON) of the server, by name.
      "awk '$6 == \"01\" && $8 ~ /^@sandbar-/ { print $8 }' /proc/net/unix | sort -t- -k3",
    );
    const names = listed.stdout.trim().split("\n");
    assert.equal(names.length, 2, listed.stdout);
    assert.match(names[0], /^@sandbar-[0-9a-f]{32}-9000$/);
    assert.match(names[1], /^@sandbar-[0-9a-f]{32}-9001$/);
    await sandbox.files.write("/tmp/connect.py", CONNECT_ABSTRACT);
    await sandbox.files.write("/tmp/squat.py", SQUAT);
    const tried = await sandbox.commands.run(`python3 /tmp/connect.py ${names.join(" ")}`);
    assert.equal(tried.stdout, "9000 refused 1\n9001 refused 1\n", tried.stderr); // EPERM
    // Nothing of the server is on TCP now: a command may listen on 9000 and 9001 itself.
    const squatter = await sandbox.commands.run(
      "python3 /tmp/squat.py > /tmp/squat.log 2>&1",
      { background: true },
    );
    try {
      const started = await sandbox.commands.run(
        "for i in $(seq 50); do grep -q listening /tmp/squat.log && break; sleep 0.1; done; " +
          "cat /tmp/squat.log",
      );
      assert.equal(started.stdout, "listening\n");
      // The client's paths to the server: commands, files, a terminal over the PTY WebSocket.
      assert.equal((await sandbox.commands.run("echo hi")).stdout, "hi\n");
      await sandbox.files.write("note.txt", "kept");
      assert.equal(await sandbox.files.read("note.txt"), "kept");
      await using terminal = await sandbox.getTerminal();
      terminal.send("echo pty-$((6*7))\n");
      assert.match(await terminal.expect(/pty-42/), /pty-42/);
      const log = await sandbox.commands.run("cat /tmp/squat.log");
      assert.equal(log.stdout, "listening\n", "the command received none of the requests");
    } finally {
      await squatter.kill();
    }
  },
});

Deno.test({
  name: "SANDBAR_ABSTRACT_SOCKETS=off: the server is on TCP and its ports are closed to commands",
  ignore: landlockAbi() < 4, // TCP port rules

  fn: async () => {
    const out = JSON.parse(
      await runChild(
        `const s = await sdk.Sandbox.create();
         const probe = (p) => \`(exec 3<>/dev/tcp/127.0.0.1/\${p}) 2>&1 | grep -q 'Permission denied' && echo \${p}:denied\`;
         const r = await s.commands.run(
           "grep -c '@sandbar-' /proc/net/unix; awk '$4 == \\"0A\\" { print $2 }' /proc/net/tcp | sort; " +
           probe(9000) + "; " + probe(9001), { timeout: 30 });
         const hi = await s.commands.run("echo hi");
         await s.kill();
         console.log(JSON.stringify({ stdout: r.stdout, hi: hi.stdout }));`,
        { SANDBAR_ABSTRACT_SOCKETS: "off" },
      ),
    );
    // Listening on 127.0.0.1:9000 and 9001 (hex 2328, 2329); the kernel refuses the connects.
    assert.equal(
      out.stdout,
      "0\n0100007F:2328\n0100007F:2329\n9000:denied\n9001:denied\n",
    );
    assert.equal(out.hi, "hi\n");
  },
});
