/**
 * The docker provider's sizes against a real `dockerd`: `memory` past its limit kills the
 * process inside only, `pids` stops a fork bomb, `cpu` caps what the engine's stats read, and
 * `disk` on a storage driver that cannot cap it is an error.
 */

import assert from "node:assert/strict";
import { type DockerProvider, ProviderFeatureNotSupportedError, Sandbox } from "../../sdk/mod.ts";
import { BASE_IMAGE, dockerIgnored } from "./docker_engine.ts";
import { dockerFixture } from "./docker_helpers.ts";

const ignore = dockerIgnored();
const docker = dockerFixture();
let provider: DockerProvider;

async function setUp(): Promise<void> {
  ({ provider } = await docker());
}

Deno.test({
  name: "docker: memory past the limit kills the process inside only; the sandbox goes on",
  ignore,
  async fn() {
    await setUp();
    await using sandbox = await Sandbox.create(BASE_IMAGE, {
      provider: "docker",
      memory: 384,
      timeout: 120,
    });
    const inspect = await provider.engine.call<
      { HostConfig: { Memory: number; MemorySwap: number } }
    >(
      "GET",
      `/containers/sandbar-${sandbox.id}/json`,
    );
    assert.equal(inspect.HostConfig.Memory, 384 * 1024 * 1024);
    assert.equal(inspect.HostConfig.MemorySwap, 384 * 1024 * 1024, "no swap beyond the limit");
    const hog = await sandbox.commands.run(
      "python3 -c \"b = bytearray(1024 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])\"",
      { timeout: 60 },
    );
    assert.equal(hog.exitCode, 137, `killed by SIGKILL: ${hog.stderr}`);
    assert.equal((await sandbox.commands.run("echo alive")).stdout, "alive\n");
    const metrics = await sandbox.getMetrics();
    assert.equal(metrics.memTotal, 384 * 1024 * 1024);
    assert.ok(metrics.oomKills >= 1, `oom kills: ${metrics.oomKills}`);
    if (await provider.engine.product() === "podman") {
      // Podman's compatible service has no `oom` event for a kill inside a running container:
      // the count comes from the kernel, and getEvents says it cannot tell when.
      await assert.rejects(
        sandbox.getEvents(),
        (e: Error) => e instanceof ProviderFeatureNotSupportedError && /Podman/.test(e.message),
      );
      await sandbox.pause();
      await assert.rejects(sandbox.getMetrics(), /is paused; on Podman/);
      await sandbox.resume();
      assert.equal((await sandbox.getMetrics()).oomKills, metrics.oomKills);
      return;
    }
    const events = await sandbox.getEvents();
    assert.equal(events.length, metrics.oomKills);
    assert.equal(events[0].type, "oom_kill");
  },
});

Deno.test({
  name: "docker: a pids limit stops a fork bomb; the sandbox goes on",
  ignore,
  async fn() {
    await setUp();
    await using sandbox = await Sandbox.create(BASE_IMAGE, {
      provider: "docker",
      pids: 200,
      timeout: 120,
    });
    // Processes that fork until the kernel refuses; they end with the command (the server
    // ends a command's process group). Waited for by count, not by a fixed sleep: on a loaded
    // machine 200 forks took longer than 1.5 s.
    const bomb = await sandbox.commands.run(
      "(sh -c 'while :; do sleep 30 & done' &); f=/sys/fs/cgroup/pids/pids.current; " +
        "for i in $(seq 1 200); do [ $(cat $f) -ge 195 ] && break; sleep 0.1; done; sleep 0.5; " +
        "cat $f",
      { timeout: 30 },
    );
    assert.match(bomb.stderr, /Cannot fork/);
    assert.ok(Number(bomb.stdout.trim()) > 150 && Number(bomb.stdout.trim()) <= 200, bomb.stdout);
    let alive = "";
    for (let i = 0; i < 20 && alive !== "alive\n"; i++) {
      await new Promise((r) => setTimeout(r, 500));
      alive = await sandbox.commands.run("echo alive").then((r) => r.stdout, () => "");
    }
    assert.equal(alive, "alive\n", "the server answers once the bomb is gone");
    const metrics = await sandbox.getMetrics();
    assert.equal(metrics.processLimit, 200);
  },
});

Deno.test({
  name: "docker: cpu caps the sandbox (read from the engine's stats); disk is refused here",
  ignore,
  async fn() {
    await setUp();
    await using sandbox = await Sandbox.create(BASE_IMAGE, {
      provider: "docker",
      cpu: 1,
      timeout: 120,
    });
    const busy = sandbox.commands.run(
      "for i in 1 2; do (sh -c 'while :; do :; done' &); done; sleep 5",
      { timeout: 30 },
    );
    busy.catch(() => {}); // awaited below; a failed assertion before must not leave it unhandled
    await new Promise((r) => setTimeout(r, 2000));
    const metrics = await sandbox.getMetrics();
    assert.equal(metrics.cpuCount, 1);
    // Two busy loops on this machine's two cores, capped at one core: at most the quota (with
    // the noise of one sample). How far below it depends on what else the shared machine runs.
    const usedCores = metrics.cpuUsedPct! / 100;
    assert.ok(usedCores > 0 && usedCores < 1.15, `cores used: ${usedCores}`);
    const quota = await sandbox.commands.run(
      "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us 2>/dev/null" +
        " || cat /sys/fs/cgroup/cpu.max",
    );
    assert.match(quota.stdout, /^100000\s+100000\s*$/, "the kernel's quota: one core");
    await busy;
    const inspect = await provider.engine.call<{ HostConfig: { NanoCpus: number } }>(
      "GET",
      `/containers/sandbar-${sandbox.id}/json`,
    );
    assert.equal(inspect.HostConfig.NanoCpus, 1e9);

    const info = await provider.engine.call<{ Driver: string; DriverStatus: [string, string][] }>(
      "GET",
      "/info",
    );
    const backing = info.DriverStatus.find(([k]) => k === "Backing Filesystem")?.[1];
    if (info.Driver === "overlay2" && backing !== "xfs") {
      await assert.rejects(
        Sandbox.create(BASE_IMAGE, { provider: "docker", disk: 1024 }),
        (e: Error) =>
          e instanceof ProviderFeatureNotSupportedError &&
          /disk: the engine's storage driver/.test(e.message),
      );
    }
  },
});
