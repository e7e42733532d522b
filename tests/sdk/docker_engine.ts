/**
 * A real Docker engine for the docker provider's tests, and their base image.
 *
 * The engine: the one `SANDBAR_TEST_DOCKER_HOST` names (`.ci/run` starts one for the whole run
 * and sets it; if it does not answer, the tests fail), else a `dockerd` of the test file's own
 * with its data root, exec root and socket in a temp directory, no bridge and no iptables
 * changes, stopped when the file's tests end. Without `dockerd` on PATH the tests are ignored,
 * except under CI (`CI` set), where they fail.
 *
 * The base image `sandbar-test-base:bookworm-curl`: no image registry is reachable here, so it is a
 * root file system made from Debian's packages by `debootstrap --variant=minbase` (bookworm,
 * with python3, python3-ipykernel, procps and curl; about 2 minutes, once), kept as a tarball in
 * `~/.cache/sandbar/` and imported into an engine that lacks it (about 5 s). Debian's own
 * packages rather than the host's files: a real distribution image, as users' images are, that
 * does not change with what this machine has installed.
 */

import { join } from "node:path";
import { removeDaemonDir } from "../helpers/remove_daemon_dir.ts";
import { stopChild } from "../helpers/stop_child.ts";

/** The test image (its tag names what it has beyond python, so an engine holding an older one imports it). */
export const BASE_IMAGE = "sandbar-test-base:bookworm-curl";
const PACKAGES = "python3,python3-ipykernel,procps,curl";

/** A running engine. */
export interface TestEngine {
  /** Its `DOCKER_HOST`. */
  host: string;
  /** Its Unix socket path. */
  socket: string;
  /** Stop it (nothing when it is CI's). */
  stop(): Promise<void>;
}

/** Whether `dockerd` is installed. */
export function hasDockerd(): boolean {
  try {
    return Deno.statSync("/usr/sbin/dockerd").isFile || Deno.statSync("/usr/bin/dockerd").isFile;
  } catch {
    return false;
  }
}

/** Why the docker tests do not run here, or null when they do. */
export function dockerIgnored(): boolean {
  if (Deno.env.get("SANDBAR_TEST_DOCKER_HOST")) return false;
  if (Deno.env.get("CI")) return false; // under CI a missing engine is a failure, not a skip
  return !hasDockerd() || Deno.uid() !== 0;
}

async function ping(socket: string): Promise<boolean> {
  try {
    const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
    try {
      const res = await fetch("http://docker/_ping", { client });
      return res.ok && (await res.text()) === "OK";
    } finally {
      client.close();
    }
  } catch {
    return false;
  }
}

/** Start a `dockerd` of its own under a temp directory; `tcp` adds a loopback TCP listener. */
export async function startDockerd(options: { tcpPort?: number } = {}): Promise<TestEngine> {
  const dir = await Deno.makeTempDir({ prefix: "sbd" });
  const socket = join(dir, "docker.sock");
  const hosts = [`unix://${socket}`];
  if (options.tcpPort) hosts.push(`tcp://127.0.0.1:${options.tcpPort}`);
  const log = await Deno.open(join(dir, "dockerd.log"), { write: true, create: true });
  const child = new Deno.Command("dockerd", {
    args: [
      "--data-root",
      join(dir, "data"),
      "--exec-root",
      join(dir, "exec"),
      "--pidfile",
      join(dir, "dockerd.pid"),
      ...hosts.flatMap((h) => ["-H", h]),
      "--bridge=none",
      "--iptables=false",
      "--ip6tables=false",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const drain = (s: ReadableStream<Uint8Array>) => s.pipeTo(log.writable, { preventClose: true });
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]).catch(() => {});
  const until = Date.now() + 60_000;
  while (!(await ping(socket))) {
    const exited = await Promise.race([child.status, new Promise((r) => setTimeout(r, 100))]);
    if (exited || Date.now() > until) {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
      await drained;
      const text = await Deno.readTextFile(join(dir, "dockerd.log")).catch(() => "");
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw new Error(`dockerd did not start:\n${text.slice(-3000)}`);
    }
  }
  return {
    host: `unix://${socket}`,
    socket,
    async stop() {
      await stopChild(child, 20_000);
      await drained;
      log.close();
      // Its containerd, and mounts a daemon stopped early may leave (the data root is bound
      // onto itself), then the directory.
      const containerd = await Deno.readTextFile(join(dir, "exec/containerd/containerd.pid"))
        .catch(() => "");
      if (/^\d+$/.test(containerd.trim())) {
        try {
          Deno.kill(Number(containerd.trim()), "SIGKILL");
        } catch { /* gone */ }
      }
      await removeDaemonDir(dir);
    },
  };
}

/** The engine for a test file: CI's, or one of its own. */
export async function testEngine(): Promise<TestEngine> {
  const given = Deno.env.get("SANDBAR_TEST_DOCKER_HOST");
  if (given) {
    const socket = given.replace(/^unix:\/\//, "");
    const until = Date.now() + 30_000;
    while (!(await ping(socket))) {
      if (Date.now() > until) throw new Error(`SANDBAR_TEST_DOCKER_HOST ${given} does not answer`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return { host: given, socket, stop: () => Promise.resolve() };
  }
  return await startDockerd();
}

function cacheDir(): string {
  const base = Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache");
  return join(base, "sandbar");
}

async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${text.slice(-3000)}`);
  }
}

/** The base image's tarball, made once (debootstrap) and cached. */
export async function baseTarball(): Promise<string> {
  const tarball = join(cacheDir(), `docker-base-bookworm-${PACKAGES.replaceAll(",", "-")}.tar`);
  try {
    await Deno.stat(tarball);
    return tarball;
  } catch { /* build it */ }
  await Deno.mkdir(cacheDir(), { recursive: true });
  const root = await Deno.makeTempDir({ prefix: "sandbar-rootfs-" });
  try {
    await run("debootstrap", [
      "--variant=minbase",
      `--include=${PACKAGES}`,
      "bookworm",
      root,
      "http://deb.debian.org/debian",
    ]).catch(() => {}); // its resolver leaves some of ipykernel's dependencies unconfigured:
    await Deno.copyFile("/etc/resolv.conf", join(root, "etc/resolv.conf"));
    await run("chroot", [root, "apt-get", "-f", "install", "-y", "-qq"], {
      DEBIAN_FRONTEND: "noninteractive",
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    });
    await run("chroot", [root, "apt-get", "clean"], { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" });
    await run("chroot", [root, "python3", "-c", "import ipykernel"], {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    });
    await Deno.remove(join(root, "var/lib/apt/lists"), { recursive: true }).catch(() => {});
    await run("tar", ["-C", root, "--numeric-owner", "-cf", `${tarball}.part`, "."]);
    await Deno.rename(`${tarball}.part`, tarball);
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
  return tarball;
}

/** Make sure the engine has the base image (importing the cached tarball when not). */
export async function ensureBaseImage(engine: TestEngine): Promise<string> {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: engine.socket } });
  try {
    const has = await fetch(`http://docker/v1.41/images/${BASE_IMAGE}/json`, { client });
    await has.body?.cancel();
    if (has.ok) return BASE_IMAGE;
    const tarball = await baseTarball();
    const file = await Deno.open(tarball);
    const res = await fetch(
      // The tag in `repo`: Podman's compatible service ignores a separate `tag` on an import
      // (it tags `latest`); Docker takes either.
      `http://docker/v1.41/images/create?fromSrc=-&repo=${encodeURIComponent(BASE_IMAGE)}`,
      {
        method: "POST",
        headers: { "content-type": "application/x-tar" },
        body: file.readable,
        client,
      },
    );
    const text = await res.text();
    if (!res.ok || text.includes('"error"')) throw new Error(`image import failed: ${text}`);
    const made = await fetch(`http://docker/v1.41/images/${BASE_IMAGE}/json`, { client });
    await made.body?.cancel();
    if (!made.ok) throw new Error(`image import gave no ${BASE_IMAGE}: ${text}`);
    return BASE_IMAGE;
  } finally {
    client.close();
  }
}

if (import.meta.main) {
  // `.ci/run`: the base image into the engine SANDBAR_TEST_DOCKER_HOST names, before the tests.
  const engine = await testEngine();
  const started = performance.now();
  await ensureBaseImage(engine);
  console.log(`base image ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
