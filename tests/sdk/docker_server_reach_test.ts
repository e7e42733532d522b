/**
 * Nothing a docker sandbox runs reaches its server; every client does. Where the kernel's
 * Landlock scopes abstract sockets (ABI 6) the server in the container listens on two abstract
 * Unix sockets with random names, not on TCP: a command that reads their names from
 * `/proc/net/unix` is refused by the kernel when it connects, and one that listens on
 * 127.0.0.1:9000 and 9001 receives none of the requests, neither the creating process's (its
 * relay is preloaded into the server) nor a second process's (its relay is started by the
 * engine's exec and reads the server's record of the names). With `SANDBAR_ABSTRACT_SOCKETS=off`
 * on the host the server is on TCP, closed to commands by Landlock's port rules, and a second
 * process's relay, finding no record, reaches it on 127.0.0.1:9000.
 */

import assert from "node:assert/strict";
import { Sandbox } from "../../sdk/mod.ts";
import { landlockAbi } from "../../server/confine/landlock.ts";
import { BASE_IMAGE, dockerIgnored } from "./docker_engine.ts";
import { dockerFixture } from "./docker_helpers.ts";
import { runChild } from "./sandbox_helpers.ts";
import {
  assertSocketsRefused,
  assertSquatterGotNothing,
  startSquatter,
  useEveryPath,
} from "../helpers/server_reach.ts";

const docker = dockerFixture();

Deno.test({
  name: "docker: a command cannot connect to the server's sockets, nor take its requests on 9000",
  // The base image has python3; the scoping needs Landlock ABI 6 on the engine's kernel (this one).
  ignore: dockerIgnored() || landlockAbi() < 6,
  async fn() {
    const { engine } = await docker();
    await using sandbox = await Sandbox.create(BASE_IMAGE, { provider: "docker" });
    await assertSocketsRefused(sandbox);
    const squatter = await startSquatter(sandbox);
    try {
      await useEveryPath(sandbox);
      // A second process: its relay is the engine's exec, which reads where the sockets are.
      const env = { DOCKER_HOST: engine.host, SANDBAR_PROVIDER: "docker" };
      const read = await runChild(
        `const s = await sdk.Sandbox.connect(${JSON.stringify(sandbox.id)});
         console.log((await s.commands.run("cat note.txt")).stdout.trim());`,
        env,
      );
      assert.equal(read, "kept");
      await assertSquatterGotNothing(sandbox);
    } finally {
      await squatter.kill();
    }
  },
});

Deno.test({
  name:
    "docker, SANDBAR_ABSTRACT_SOCKETS=off: the server on TCP, closed to commands; relays reach it",
  ignore: dockerIgnored() || landlockAbi() < 4, // TCP port rules
  async fn() {
    const { engine } = await docker();
    const env = { DOCKER_HOST: engine.host, SANDBAR_PROVIDER: "docker" };
    const created = JSON.parse(
      await runChild(
        `const s = await sdk.Sandbox.create(${JSON.stringify(BASE_IMAGE)});
         const probe = (p) => \`(exec 3<>/dev/tcp/127.0.0.1/\${p}) 2>&1 | grep -q 'Permission denied' && echo \${p}:denied\`;
         const r = await s.commands.run(
           "grep -c '@sandbar-' /proc/net/unix; awk '$4 == \\"0A\\" { print $2 }' /proc/net/tcp | sort; " +
           probe(9000) + "; " + probe(9001), { timeout: 30 });
         console.log(JSON.stringify({ id: s.id, stdout: r.stdout }));`,
        { ...env, SANDBAR_ABSTRACT_SOCKETS: "off" },
      ),
    );
    try {
      assert.equal(
        created.stdout,
        "0\n0100007F:2328\n0100007F:2329\n9000:denied\n9001:denied\n",
      );
      // A second process: its exec'd relay finds no record of sockets and dials 127.0.0.1:9000.
      const hi = await runChild(
        `const s = await sdk.Sandbox.connect(${JSON.stringify(created.id)});
         console.log((await s.commands.run("echo hi")).stdout.trim());`,
        env,
      );
      assert.equal(hi, "hi");
    } finally {
      await Sandbox.killById(created.id, { provider: "docker" });
    }
  },
});
