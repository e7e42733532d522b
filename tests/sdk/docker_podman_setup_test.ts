/**
 * The docker provider on a Podman service of the test's own (`podman_engine.ts`) set up in the
 * two ways that fail a create and that a user fixes in Podman's set-up, not in sandbar: no
 * container init binary (Debian's `podman` does not pull in `catatonit`), and Podman's default
 * limits for containers where root may not raise its own (no CAP_SYS_RESOURCE, as inside a
 * container). Each create is an error whose suggestion says what to change, and leaves no
 * container. The image is one with no files: both failures come before anything in it runs.
 */

import assert from "node:assert/strict";
import { DockerProvider, Sandbox, SandboxError } from "../../sdk/mod.ts";
import { tarArchive } from "../../sdk/providers/docker/tar.ts";
import { hasPodman, mayRaiseLimits, startPodman } from "./podman_engine.ts";

const IMAGE = "sandbar-test-empty:1";

async function createOn(
  conf: string,
  hideInit = false,
): Promise<{ error: unknown; left: unknown[] }> {
  const engine = await startPodman(conf, { hideInit });
  const home = await Deno.makeTempDir({ prefix: "sbh-" });
  const provider = new DockerProvider({ host: engine.host, home });
  try {
    const res = await provider.engine.fetch("POST", "/images/create", {
      query: { fromSrc: "-", repo: IMAGE },
      body: tarArchive([{ name: "etc/" }]),
    });
    assert.doesNotMatch(await res.text(), /"error"/);
    assert.equal(await provider.engine.product(), "podman");
    const error = await Sandbox.create(IMAGE, { provider, timeout: 60 }).then(
      (s) => s.kill().then(() => null),
      (e) => e,
    );
    const left = await provider.engine.call<unknown[]>("GET", "/containers/json", {
      query: { all: true },
    });
    return { error, left };
  } finally {
    provider.engine.close();
    await engine.stop();
    await Deno.remove(home, { recursive: true });
  }
}

Deno.test({
  name: "docker on Podman: no container init binary is an error that names catatonit",
  ignore: !hasPodman(),
  async fn() {
    const { error, left } = await createOn(
      '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n',
      true,
    );
    assert.ok(error instanceof SandboxError, `a SandboxError: ${error}`);
    assert.match(error.message, /container-init binary not found/);
    assert.match(error.suggestion, /install it \(apt-get install catatonit/);
    assert.deepEqual(left, []);
  },
});

Deno.test({
  name: "docker on Podman: limits root may not raise are an error that names default_ulimits",
  // With CAP_SYS_RESOURCE, Podman's defaults (1048576) are set and the create gets past them.
  ignore: !hasPodman() || mayRaiseLimits(),
  async fn() {
    const { error, left } = await createOn("[containers]\n");
    assert.ok(error instanceof SandboxError, `a SandboxError: ${error}`);
    assert.match(error.message, /error setting rlimit/);
    assert.match(error.suggestion, /default_ulimits = \["nofile=N:N", "nproc=M:M"\]/);
    assert.deepEqual(left, []);
  },
});
