/**
 * The docker sandbox's server runs under Deno permissions that name what is in its container, not
 * what is on the host: its `--allow-read` list takes the image's `PATH` and the container's Deno,
 * never a directory of the creating process's own `PATH` (a `~/.cargo/bin`, a pyenv's shims).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { buildTemplate, Sandbox } from "../../sdk/mod.ts";
import { BASE_IMAGE, dockerIgnored } from "./docker_engine.ts";
import { dockerFixture } from "./docker_helpers.ts";

const ignore = dockerIgnored();
const docker = dockerFixture();

/** The entries of every `--allow-read=` flag of an argv, flag by flag. */
function allowRead(argv: string[]): string[][] {
  return argv.filter((a) => a.startsWith("--allow-read=")).map((a) =>
    a.slice("--allow-read=".length).split(",")
  );
}

Deno.test({
  name: "docker: the server's read permissions name the image's PATH and Deno, not the host's",
  ignore,
  async fn() {
    const { engine, provider } = await docker();
    // A directory on this process's PATH that the container does not have; the image's context.
    const hostOnly = await Deno.makeTempDir({ prefix: "sandbar-host-only-bin-" });
    await Deno.writeTextFile(join(hostOnly, "tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 });
    const image = await buildTemplate({
      name: "sandbar-test-tools-path",
      host: engine.host,
      context: hostOnly,
      dockerfile: `FROM ${BASE_IMAGE}\nCOPY tool /opt/tools/bin/tool\n` +
        "ENV PATH=/opt/tools/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
    });
    const path = Deno.env.get("PATH") ?? "";
    Deno.env.set("PATH", `${hostOnly}:${path}`);
    let sandbox: Sandbox | undefined;
    try {
      sandbox = await Sandbox.create(image, {
        provider: "docker",
        timeout: 120,
      });
      const container = await provider.engine.call<{ Config: { Cmd: string[] } }>(
        "GET",
        `/containers/sandbar-${sandbox.id}/json`,
      );
      const lists = allowRead(container.Config.Cmd);
      const all = lists.flat();
      assert.ok(!all.includes(hostOnly), `a host-only PATH directory is readable: ${all}`);
      assert.ok(all.includes("/opt/tools/bin"), `the image's PATH directory is not: ${all}`);
      assert.ok(all.includes("/opt/sandbar/bin"), `the container's Deno is not: ${all}`);
      // Every entry of the server's own list (the first: the relay's follow it, with a key file
      // it has spent) is there in the container, looked at by the engine's exec.
      const missing = await provider.engine.exec(`sandbar-${sandbox.id}`, [
        "sh",
        "-c",
        'for p; do [ -e "$p" ] || echo "$p"; done',
        "sh",
        ...lists[0],
      ]);
      assert.equal(missing.exitCode, 0);
      assert.equal(missing.stdout, "", "entries the container does not have");
      // The server finds and runs a program of the image's PATH.
      assert.equal((await sandbox.commands.run("tool")).stdout, "tool\n");
    } finally {
      Deno.env.set("PATH", path);
      await sandbox?.kill();
      await Deno.remove(hostOnly, { recursive: true });
    }
  },
});
