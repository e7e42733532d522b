/**
 * A Podman Docker-compatible service of a test's own (`podman system service`), as root, with
 * its storage root, run root, volume path, network-config directory and socket in a temp
 * directory, cgroupfs and file events (no systemd needed), and the `containers.conf` the test
 * gives (`CONTAINERS_CONF`). Stopping it removes its containers, ends the service and the
 * monitors (`conmon`) it started (each exec's waits 300 s after the exec ends), and unmounts
 * and removes the directory.
 */

import { join } from "node:path";
import type { TestEngine } from "./docker_engine.ts";
import { removeDaemonDir } from "../helpers/remove_daemon_dir.ts";
import { stopChild } from "../helpers/stop_child.ts";

/** Whether `podman` is installed and this is root (the service is run as root). */
export function hasPodman(): boolean {
  try {
    return Deno.uid() === 0 && Deno.statSync("/usr/bin/podman").isFile;
  } catch {
    return false;
  }
}

/** Whether this process may raise its resource limits (CAP_SYS_RESOURCE, bit 24). */
export function mayRaiseLimits(): boolean {
  const status = Deno.readTextFileSync("/proc/self/status");
  const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1] ?? "0";
  return (BigInt(`0x${eff}`) >> 24n & 1n) === 1n;
}

/**
 * Start a service with `conf` as its containers.conf; resolves once its socket answers.
 * `hideInit` runs it in a mount namespace of its own where `/usr/libexec/podman` (catatonit's
 * directory) is an empty tmpfs, as on a machine without catatonit.
 */
export async function startPodman(
  conf: string,
  options: { hideInit?: boolean } = {},
): Promise<TestEngine> {
  const dir = await Deno.makeTempDir({ prefix: "sbpt" });
  const socket = join(dir, "podman.sock");
  await Deno.writeTextFile(join(dir, "containers.conf"), conf);
  const flags = [
    ["--root", join(dir, "root")],
    ["--runroot", join(dir, "run")],
    ["--tmpdir", join(dir, "tmp")],
    ["--volumepath", join(dir, "volumes")],
    ["--network-config-dir", join(dir, "net")],
    ["--storage-driver", "overlay"],
    ["--cgroup-manager", "cgroupfs"],
    ["--events-backend", "file"],
  ].flat();
  const log = await Deno.open(join(dir, "podman.log"), { write: true, create: true });
  const service = ["podman", ...flags, "system", "service", "--time=0", `unix://${socket}`];
  const child = new Deno.Command(options.hideInit ? "unshare" : service[0], {
    args: options.hideInit
      ? [
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount -t tmpfs tmpfs /usr/libexec/podman && exec "$@"',
        "sh",
        ...service,
      ]
      : service.slice(1),
    env: { CONTAINERS_CONF: join(dir, "containers.conf") },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const drain = (s: ReadableStream<Uint8Array>) => s.pipeTo(log.writable, { preventClose: true });
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]).catch(() => {});
  const stop = async () => {
    await new Deno.Command("podman", {
      args: [...flags, "rm", "-af", "-t", "0"],
      env: {
        CONTAINERS_CONF: join(dir, "containers.conf"),
      },
      stdout: "null",
      stderr: "null",
    }).output().catch(() => {});
    await stopChild(child, 10_000);
    await drained;
    log.close();
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const comm = Deno.readTextFileSync(`/proc/${entry.name}/comm`).trim();
        const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
        if (comm === "conmon" && cmdline.includes(`${dir}/root`)) {
          Deno.kill(Number(entry.name), "SIGKILL");
        }
      } catch { /* gone */ }
    }
    await removeDaemonDir(dir);
  };
  const until = Date.now() + 30_000;
  while (true) {
    try {
      const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
      try {
        const res = await fetch("http://podman/_ping", { client });
        if (res.ok && (await res.text()) === "OK") break;
      } finally {
        client.close();
      }
    } catch { /* not yet */ }
    if (Date.now() > until) {
      await stop();
      throw new Error("podman system service did not start");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { host: `unix://${socket}`, socket, stop };
}
