/**
 * The docker provider's templates against a real `dockerd`: a template built from a Dockerfile
 * (a step that installs a Debian package, with no network: a `.deb` made here with `dpkg-deb`
 * and sent in the build context), then used; a snapshot taken after writing a file, seen by a
 * new sandbox; a named volume that keeps a file after its sandbox is killed; an anonymous volume
 * of the image removed with its sandbox; an image's probe kept for its next sandboxes, and pruned
 * once the engine no longer has the image.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  buildTemplate,
  type DockerProvider,
  Sandbox,
  SandboxError,
  ValidationError,
} from "../../sdk/mod.ts";
import { BASE_IMAGE, dockerIgnored, type TestEngine } from "./docker_engine.ts";
import { dockerFixture, sandboxVolumes } from "./docker_helpers.ts";

const ignore = dockerIgnored();
const docker = dockerFixture();
let engine: TestEngine | undefined;
let provider: DockerProvider;
let home = "";

async function setUp(): Promise<void> {
  ({ engine, provider, home } = await docker());
}

async function volumes(): Promise<string[]> {
  const v = await provider.engine.call<{ Volumes: { Name: string }[] | null }>("GET", "/volumes");
  return (v.Volumes ?? []).map((x) => x.Name);
}

/** A real Debian package with one program, made with dpkg-deb. */
async function helloDeb(): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(dir, "pkg/DEBIAN"), { recursive: true });
    await Deno.mkdir(join(dir, "pkg/usr/bin"), { recursive: true });
    await Deno.writeTextFile(
      join(dir, "pkg/DEBIAN/control"),
      "Package: sandbar-hello\nVersion: 1.0\nArchitecture: all\n" +
        "Maintainer: sandbar tests <tests@example.invalid>\nDescription: a test package\n",
    );
    await Deno.writeTextFile(
      join(dir, "pkg/usr/bin/sandbar-hello"),
      "#!/bin/sh\necho hello from a package\n",
      { mode: 0o755 },
    );
    const out = await new Deno.Command("dpkg-deb", {
      args: ["--build", join(dir, "pkg"), join(dir, "hello.deb")],
      stdout: "null",
    }).output();
    assert.ok(out.success, "dpkg-deb");
    return await Deno.readFile(join(dir, "hello.deb"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "docker: a template built from a Dockerfile that installs a Debian package, then used",
  ignore,
  async fn() {
    await setUp();
    const lines: string[] = [];
    const name = await buildTemplate({
      name: "sandbar-test-hello",
      host: engine!.host,
      dockerfile: `FROM ${BASE_IMAGE}\nCOPY hello.deb /tmp/hello.deb\n` +
        "RUN dpkg -i /tmp/hello.deb && rm /tmp/hello.deb\nVOLUME /cache\n",
      files: { "hello.deb": await helloDeb() },
      onLog: (line) => lines.push(line),
    });
    assert.equal(name, "sandbar-test-hello:latest");
    // Docker prints "Step 3/4 : RUN", Podman's builder "STEP 3/4: RUN".
    assert.ok(lines.some((l) => /^step 3\/4 ?: RUN dpkg -i/i.test(l)), lines.join("\n"));
    assert.ok(
      lines.some((l) => /Setting up sandbar-hello/.test(l)),
      "dpkg's output came as it built",
    );
    const sandbox = await Sandbox.create("sandbar-test-hello", {
      provider: "docker",
      timeout: 120,
    });
    assert.equal((await sandbox.commands.run("sandbar-hello")).stdout, "hello from a package\n");
    const status = await sandbox.commands.run("dpkg -s sandbar-hello | grep Status");
    assert.equal(status.stdout, "Status: install ok installed\n");
    // The image's VOLUME made an anonymous volume; kill removes it.
    const anonymous = await sandboxVolumes(provider, sandbox.id);
    assert.equal(anonymous.length, 1);
    assert.ok((await volumes()).includes(anonymous[0]));
    await sandbox.kill();
    assert.ok(!(await volumes()).includes(anonymous[0]), "kill removed the anonymous volume");

    await assert.rejects(
      buildTemplate({
        name: "sandbar-test-broken",
        host: engine!.host,
        dockerfile: `FROM ${BASE_IMAGE}\nRUN exit 3\n`,
      }),
      // Docker: "returned a non-zero code: 3"; Podman: "while running runtime: exit status 3".
      (e: Error) =>
        e instanceof SandboxError && /(non-zero code: |exit status )3\b/.test(e.message),
    );
    await assert.rejects(
      buildTemplate({ name: "Bad Name", dockerfile: "FROM x\n" }),
      ValidationError,
    );
  },
});

Deno.test({
  name: "docker: a snapshot after writing a file starts a new sandbox that sees it",
  ignore,
  async fn() {
    await setUp();
    {
      await using first = await Sandbox.create(BASE_IMAGE, { provider: "docker", timeout: 120 });
      await first.files.write("/home/user/state.txt", "saved state");
      await first.commands.run("mkdir -p /srv/tool && echo v1 > /srv/tool/version");
      assert.equal(await first.snapshot("sandbar-test-snap:v1"), "sandbar-test-snap:v1");
      assert.equal((await first.commands.run("echo running")).stdout, "running\n");
      await assert.rejects(first.snapshot("Not A Name"), ValidationError);
    }
    await using second = await Sandbox.create("sandbar-test-snap:v1", {
      provider: "docker",
      timeout: 120,
    });
    assert.equal(await second.files.read("/home/user/state.txt"), "saved state");
    assert.equal((await second.commands.run("cat /srv/tool/version")).stdout, "v1\n");
    assert.equal((await second.runCode("print(6 * 7)")).text, "42");
  },
});

Deno.test({
  name: "docker: a named volume keeps a file after its sandbox is killed and shows it in the next",
  ignore,
  async fn() {
    await setUp();
    const volume = `sandbar-test-data-${Date.now()}`;
    {
      await using one = await Sandbox.create(BASE_IMAGE, {
        provider: "docker",
        volumes: { [volume]: "/data" },
      });
      await one.files.write("/data/kept.txt", "kept across sandboxes");
    }
    assert.ok((await volumes()).includes(volume), "the named volume outlives its sandbox");
    await using two = await Sandbox.create(BASE_IMAGE, {
      provider: "docker",
      volumes: { [volume]: "/mnt/again" },
    });
    assert.equal(await two.files.read("/mnt/again/kept.txt"), "kept across sandboxes");
    await two.kill();
    assert.ok((await volumes()).includes(volume));
    await provider.engine.call("DELETE", `/volumes/${volume}`);
  },
});

Deno.test({
  name: "docker: an image is probed by its first sandbox only; another image, or variables that " +
    "change what the probe finds, are probed again",
  ignore,
  async fn() {
    await setUp();
    // Its python3 counts its runs in the container's own file system (each sandbox starts from
    // the image's, with none).
    const counted = await buildTemplate({
      name: "sandbar-test-probecount",
      host: engine!.host,
      dockerfile: `FROM ${BASE_IMAGE}\n` +
        "RUN mv /usr/bin/python3 /usr/bin/python3.real && " +
        `printf '#!/bin/sh\\necho run >> /var/tmp/python-runs\\nexec /usr/bin/python3.real "$@"\\n'` +
        " > /usr/bin/python3 && chmod 755 /usr/bin/python3\n",
    });
    const pythonRuns = async (sandbox: Sandbox) =>
      Number((await sandbox.commands.run("cat /var/tmp/python-runs 2>/dev/null | wc -l")).stdout);
    {
      await using first = await Sandbox.create(counted, { provider: "docker" });
      assert.ok(first.capabilities.has("code"));
      assert.ok(await pythonRuns(first) >= 1, "the first sandbox of an image probes it");
    }
    {
      await using second = await Sandbox.create(counted, { provider: "docker" });
      assert.ok(second.capabilities.has("code"), "what the first found");
      assert.equal(await pythonRuns(second), 0, "the next ones do not run the probe");
      // Another process reads it from the container's log, as for a probe that ran.
      const again = await Sandbox.connect(second.id, { provider: "docker" });
      assert.ok(again.capabilities.has("code"));
    }
    {
      await using withPath = await Sandbox.create(counted, {
        provider: "docker",
        envs: { PYTHONPATH: "/nowhere" },
      });
      assert.ok(await pythonRuns(withPath) >= 1, "a PYTHON* variable probes again");
    }
    // The same files less python3: another image, probed for itself.
    const without = await buildTemplate({
      name: "sandbar-test-probecount:no-python",
      host: engine!.host,
      dockerfile: `FROM ${counted}\nRUN rm /usr/bin/python3\n`,
    });
    await using bare = await Sandbox.create(without, { provider: "docker" });
    assert.ok(!bare.capabilities.has("code"), "no python3: no code, whatever the other image had");
    assert.ok(bare.capabilities.has("commands"));
  },
});

Deno.test({
  name: "docker: a new probe entry prunes the entries of images the engine no longer has; a " +
    "live image's stays",
  ignore,
  async fn() {
    await setUp();
    const probes = join(home, "docker-probes");
    const entryOf = async (image: string) => {
      const { Id } = await provider.engine.call<{ Id: string }>("GET", `/images/${image}/json`);
      return join(probes, Id.replace(/^sha256:/, ""));
    };
    const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
    // Each build a new image id (its label), so no entry of another run's is there.
    const build = (name: string) =>
      buildTemplate({
        name,
        host: engine!.host,
        dockerfile: `FROM ${BASE_IMAGE}\nLABEL sandbar.test=${crypto.randomUUID()}\n`,
      });
    {
      await using live = await Sandbox.create(BASE_IMAGE, { provider: "docker" });
      assert.ok(live.capabilities.has("commands"));
    }
    const liveEntry = await entryOf(BASE_IMAGE);
    assert.ok(await exists(liveEntry), "the base image's first sandbox kept its probe");
    // An image probed by its sandbox, then removed from the engine: its entry is stale.
    const gone = await build("sandbar-test-probe-gone");
    const goneEntry = await entryOf(gone);
    {
      await using sandbox = await Sandbox.create(gone, { provider: "docker" });
      assert.ok(sandbox.capabilities.has("commands"));
    }
    assert.ok(await exists(goneEntry));
    await provider.engine.call("DELETE", `/images/${gone}`, { query: { force: true } });
    // Another image's first sandbox writes its entry and prunes the stale one.
    const fresh = await build("sandbar-test-probe-fresh");
    {
      await using sandbox = await Sandbox.create(fresh, { provider: "docker" });
      assert.ok(sandbox.capabilities.has("commands"));
    }
    assert.ok(await exists(await entryOf(fresh)), "the new image's entry");
    assert.ok(!(await exists(goneEntry)), "the removed image's entry is pruned");
    assert.ok(await exists(liveEntry), "a live image's entry stays");
    await provider.engine.call("DELETE", `/images/${fresh}`, { query: { force: true } });
  },
});
