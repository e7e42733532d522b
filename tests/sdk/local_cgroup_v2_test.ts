/**
 * The cgroup v2 paths of a local sandbox's sizes, pause and kill, run for real where a v2
 * hierarchy is writable.
 *
 * This project's CI host is cgroup v1 with an empty hybrid v2 mount at `/sys/fs/cgroup/unified`:
 * it has no controllers there (so no sizes), but freezing and killing are core to v2 and the
 * first test runs there. The others need v2 with the `cpu`, `memory` and `pids` controllers (most
 * hosts): `local_cgroup_v2_vm_test.ts` runs this file, with `local_sizes_test.ts`, in a VM that
 * has them (`tests/vm/`), where they are not ignored.
 */

import assert from "node:assert/strict";
import { Sandbox } from "../../sdk/mod.ts";
import {
  type CgroupRef,
  cgroupStats,
  cgroupSupport,
  freeze,
  killAll,
  members,
  removeCgroup,
} from "../../sdk/providers/local/cgroup.ts";
import {
  dropSandbarHome,
  holdsWithin,
  processesMentioning,
  useSandbarHome,
} from "./sandbox_helpers.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

function v2Dir(): string | null {
  for (const base of ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]) {
    try {
      if (Deno.uid() === 0 && Deno.statSync(`${base}/cgroup.controllers`).isFile) return base;
    } catch { /* next */ }
  }
  return null;
}

const base = v2Dir();

Deno.test({
  name: "cgroup v2: freeze stops every member, new children included; kill ends them all",
  ignore: base === null, // needs root and a cgroup v2 mount
  fn: async () => {
    const dir = `${base}/sizes-v2-test-${crypto.randomUUID().slice(0, 8)}`;
    Deno.mkdirSync(dir);
    const ref: CgroupRef = { version: 2, dirs: { unified: dir } };
    const counter = await Deno.makeTempFile();
    // A loop forking a child per increment, entered into the cgroup before it runs.
    const child = new Deno.Command("/bin/sh", {
      args: [
        "-c",
        `echo $$ > ${dir}/cgroup.procs && exec setsid sh -c ` +
        `'while :; do sh -c "echo x >> ${counter}"; done'`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      const size = () => Deno.statSync(counter).size;
      const until = Date.now() + 10_000;
      while (size() < 40 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      assert.ok(size() >= 40, "the loop never ran");
      assert.ok(members(ref).length >= 1);
      await freeze(ref);
      assert.match(Deno.readTextFileSync(`${dir}/cgroup.events`), /^frozen 1$/m);
      const frozen = size();
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(size(), frozen, "a member ran while frozen");
      await freeze(ref, false);
      const thawed = Date.now() + 10_000;
      while (size() <= frozen && Date.now() < thawed) await new Promise((r) => setTimeout(r, 50));
      assert.ok(size() > frozen, "no progress after the thaw");
      assert.equal(cgroupStats(ref).oomKills, 0);
      await killAll(ref);
      assert.deepEqual(members(ref), []);
      await child.status;
    } finally {
      await killAll(ref).catch(() => {});
      removeCgroup(ref);
      await Deno.remove(counter);
    }
    assert.throws(() => Deno.statSync(dir), "the cgroup is removed");
  },
});

const support = cgroupSupport();
/** Sandboxes get v2 cgroups with the `cpu`, `memory` and `pids` controllers here. */
const sizesOnV2 = support.ok && support.version === 2;
const MiB = 1024 * 1024;

function sandboxCgroup(sandbox: Sandbox): string {
  const state = JSON.parse(
    Deno.readTextFileSync(`${home}/sandboxes/${sandbox.id}/state.json`),
  );
  assert.equal(state.cgroup.version, 2);
  return state.cgroup.dirs.unified;
}

const file = (path: string) => Deno.readTextFileSync(path).trim();

Deno.test({
  name: "cgroup v2: the sizes are in cpu.max, memory.max, memory.swap.max and pids.max; " +
    "the server runs in a server leaf beside work, its commands in work",
  ignore: !sizesOnV2, // needs v2 with cpu, memory and pids (tests/vm/ runs it so)
  fn: async () => {
    await using sandbox = await Sandbox.create({ cpu: 1, memory: 256 });
    const dir = sandboxCgroup(sandbox);
    assert.equal(file(`${dir}/cpu.max`), "100000 100000");
    assert.equal(Number(file(`${dir}/memory.max`)), 256 * MiB);
    try {
      assert.equal(file(`${dir}/memory.swap.max`), "0", "no swap beyond the memory size");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e; // a kernel without swap accounting
    }
    assert.equal(file(`${dir}/pids.max`), "1024");
    assert.equal(file(`${dir}/cgroup.procs`), "", "a v2 cgroup with children holds no process");
    assert.match(file(`${dir}/cgroup.subtree_control`), /cpu.*memory.*pids/);
    // The programs' share, less the server's reserve (cgroup_reserve.ts).
    assert.equal(Number(file(`${dir}/work/memory.max`)), 160 * MiB);
    assert.equal(file(`${dir}/work/pids.max`), "960");
    const comm = (pid: string) => file(`/proc/${pid}/comm`);
    assert.ok(file(`${dir}/server/cgroup.procs`).split("\n").map(comm).includes("bwrap"));
    const mark = `${41_000 + Math.floor(Math.random() * 999)}.5`;
    await sandbox.commands.start(`sleep ${mark}`, { timeout: 0 });
    assert.ok(await holdsWithin(() => processesMentioning(mark).length === 1, 60));
    // In work, or in a process tree's cgroup below it (`sdk/providers/local/tree_delegation.ts`).
    const below = (d: string): string[] => [
      d,
      ...[...Deno.readDirSync(d)].filter((e) => e.isDirectory).flatMap((e) =>
        below(`${d}/${e.name}`)
      ),
    ];
    const work = below(`${dir}/work`).flatMap((d) => file(`${d}/cgroup.procs`).split("\n"))
      .map(Number);
    assert.ok(work.includes(processesMentioning(mark)[0]), "the command runs in work");
    // What the provider reports is what the kernel holds.
    assert.equal(sandbox.info.cpuCount, 1);
    assert.equal(sandbox.info.memoryMB, 256);
    const m = await sandbox.getMetrics();
    assert.equal(m.memTotal, 256 * MiB);
    assert.equal(m.processLimit, 1024);
    assert.ok(m.processes! >= 3 && m.processes! <= 1024, `${m.processes}`);
    assert.ok(m.cpuUsedSeconds! > 0, "cpu.stat's usage_usec is read");
    const inside = await sandbox.server.system.metrics();
    assert.equal(inside.limits?.memoryBytes, 256 * MiB);
    assert.equal(inside.limits?.pids, 1024);
    await sandbox.kill();
    assert.deepEqual(processesMentioning(mark), []);
    assert.throws(() => Deno.statSync(dir), "the cgroup is removed");
  },
});

/**
 * A program that forks until the kernel refuses, each child sleeping: the process limit reached
 * the way a fork bomb reaches it, without a bomb's hundreds of shells retrying their forks (in
 * the test VM's emulated CPUs those made a command during the bomb take over 160 s on a loaded
 * host; the classic bomb is `local_sizes_test.ts`'s, on v1).
 */
const FORK_LOOP = `python3 -c '
import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
    except OSError:
        time.sleep(0.2)
'`;

Deno.test({
  name: "cgroup v2: a fork loop fills work's share, and the same sandbox's server still answers",
  ignore: !sizesOnV2, // needs v2 with cpu, memory and pids (tests/vm/ runs it so)
  fn: async () => {
    // A long lifetime: in the test VM on a loaded host this test took minutes.
    await using sandbox = await Sandbox.create({ cpu: 1, memory: 512, timeout: 1800 });
    const dir = sandboxCgroup(sandbox);
    await sandbox.files.write("notes.txt", "read while full");
    await sandbox.commands.start(FORK_LOOP, { timeout: 0 });
    let peak = 0;
    assert.ok(
      await holdsWithin(() => {
        peak = Math.max(peak, Number(file(`${dir}/work/pids.current`)));
        return peak >= 955;
      }, 180),
      `the fork loop reached only ${peak} of work's 960`,
    );
    const refused = () => Number(/^max (\d+)$/m.exec(file(`${dir}/work/pids.events`))?.[1]);
    assert.ok(await holdsWithin(() => refused() > 0, 30), "no fork was refused at work's limit");
    for (let i = 0; i < 2; i++) {
      // Generous: the test VM's CPUs are emulated.
      const r = await sandbox.commands.run("echo still here", { timeout: 150 });
      assert.equal(r.stdout, "still here\n", JSON.stringify(r));
      assert.equal(await sandbox.files.read("notes.txt"), "read while full");
      assert.ok(Number(file(`${dir}/pids.current`)) <= 1024);
      assert.ok(Number(file(`${dir}/work/pids.current`)) <= 960, "past work's share");
    }
    const m = await sandbox.getMetrics();
    assert.ok(m.processes! > 960 && m.processes! <= 1024, `${m.processes} processes`);
    await sandbox.kill();
    assert.throws(() => Deno.statSync(dir), "the cgroup is removed");
  },
});
