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
import {
  assertSocketsRefused,
  assertSquatterGotNothing,
  startSquatter,
  useEveryPath,
} from "../helpers/server_reach.ts";

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
    await assertSocketsRefused(sandbox);
    const squatter = await startSquatter(sandbox);
    try {
      await useEveryPath(sandbox);
      await assertSquatterGotNothing(sandbox);
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
