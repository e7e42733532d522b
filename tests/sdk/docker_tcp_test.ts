/**
 * The docker provider over `tcp://`: a second `dockerd` of this test's own listening on a
 * loopback TCP port besides its socket. The control plane (the Engine API) goes over TCP; the
 * data plane is the same as over a Unix socket, a relay started through the engine's exec API
 * (over TCP too) that connects to a Unix socket in the sandbox's host directory, which the
 * engine binds into the container: so the engine must run on this machine. An engine elsewhere
 * is a clear error, never a sandbox that cannot be reached. A sandbox with `network` gets its
 * egress keeper, which waits on the container over TCP as well.
 */

import assert from "node:assert/strict";
import { DockerProvider, ProviderFeatureNotSupportedError, Sandbox } from "../../sdk/mod.ts";
import { BASE_IMAGE, dockerIgnored, ensureBaseImage, startDockerd } from "./docker_engine.ts";

const ignore = dockerIgnored();

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test({
  name: "docker over tcp:// on loopback: create, a command, files, kill",
  ignore,
  async fn() {
    const port = freePort();
    const engine = await startDockerd({ tcpPort: port });
    const home = await Deno.makeTempDir({ prefix: "sbh-" });
    const provider = new DockerProvider({ host: `tcp://127.0.0.1:${port}`, home });
    try {
      await ensureBaseImage(engine);
      const sandbox = await Sandbox.create(BASE_IMAGE, { provider, timeout: 120 });
      assert.equal((await sandbox.commands.run("echo over tcp")).stdout, "over tcp\n");
      await sandbox.files.write("x.txt", "42");
      assert.equal(await sandbox.files.read("x.txt"), "42");
      const listed = await Sandbox.list({ provider });
      assert.deepEqual(listed.map((s) => s.sandboxId), [sandbox.id]);
      await sandbox.kill();
      assert.deepEqual(await Sandbox.list({ provider }), []);
      // With `network`, the egress keeper waits on the container over TCP too.
      const origin = Deno.serve(
        { hostname: "127.0.0.2", port: 0, onListen: () => {} },
        () => new Response("reached over tcp"),
      );
      try {
        const networked = await Sandbox.create(BASE_IMAGE, {
          provider,
          timeout: 120,
          network: { allow: ["127.0.0.2"] },
        });
        const got = await networked.commands.run(
          `curl -sS --max-time 10 http://127.0.0.2:${origin.addr.port}/`,
        );
        assert.equal(got.stdout, "reached over tcp", got.stderr);
        await networked.kill();
        const keepers = await Array.fromAsync(Deno.readDir(`${home}/docker-egress`));
        assert.deepEqual(keepers, [], "the keeper is gone with the sandbox");
      } finally {
        await origin.shutdown();
      }
      await assert.rejects(
        Sandbox.create(BASE_IMAGE, {
          provider: new DockerProvider({ host: "tcp://10.1.2.3:2375", home }),
        }),
        (e: Error) =>
          e instanceof ProviderFeatureNotSupportedError && /on another machine/.test(e.message),
      );
    } finally {
      provider.engine.close();
      await engine.stop();
      await Deno.remove(home, { recursive: true });
    }
  },
});
