/**
 * What an idle local sandbox costs in memory (the `memory` section of `sandbox.ts`, issue 28):
 * the drop in `MemAvailable` over 20 idle sandboxes (each has served one command; sampled 3 s
 * and 45 s after it, see `MOMENTS`), per sandbox, and where it goes, read from each process's
 * `/proc/<pid>/smaps_rollup`: anonymous memory and PSS per kind of process (the supervisor on the
 * host; the server inside, which runs the relay too; `bwrap` and anything else). Beside it, in the same round, the floor: an idle `deno run`
 * of a one-line script, which no Deno process of a sandbox can go under. Several rounds; the
 * medians are printed. On a shared machine other programs move `MemAvailable` by more than a
 * sandbox costs (two rounds of the same tree here: 39 and 101 MiB; 26 and 64 another day), so the
 * steady figure is what a sandbox holds for good: the anonymous memory of its processes plus the
 * kernel memory charged to its cgroup (page tables, namespaces, sockets, and each confined
 * identity's Landlock domain: about 4.8 MiB for the 65,534 port rules that close the server's
 * ports). PSS is printed too; it also counts shares of file pages (the `deno` binary, Deno's
 * caches) that were in the page cache before and leave `MemAvailable` as they were.
 *
 * `deno run -A scripts/bench/sandbox.ts --only memory [--runs 3]` (rounds: at most 5)
 *
 * @module
 */

import { Sandbox } from "../../sdk/mod.ts";
import { descendants, procCmdline } from "../../sdk/providers/local/procfs.ts";
import { readState, sandbarHome, SandboxDir } from "../../sdk/providers/local/state.ts";
import type { CgroupRef } from "../../sdk/providers/local/cgroup.ts";

const SANDBOXES = 20;
/**
 * When the sandboxes are sampled, in seconds after their last command: just after it, and once
 * idle. For about half a minute after its last work V8 keeps the server's young generation at
 * its grown size (8 MiB at `--max-semi-space-size=4`), then its memory reducer shrinks it to a
 * quarter MiB: measured, a server held 41.5 MiB at 3 s and 34 at 30 s and after.
 */
const MOMENTS = [3, 45];
/** What a sandbox holds for good: its processes' anonymous memory and its cgroup's kernel memory. */
const HELD = "= anon + kernel memory (held)";
/** The kind under which a sandbox's cgroup's kernel memory is counted (as anonymous). */
const KERNEL = "kernel memory of its cgroup";

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

function memAvailableKiB(): number {
  const text = Deno.readTextFileSync("/proc/meminfo");
  return Number(/MemAvailable:\s+(\d+)/.exec(text)![1]);
}

/** Anonymous memory and PSS of `pid` in MiB, or null when it is gone. */
function rollup(pid: number): { anon: number; pss: number } | null {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/smaps_rollup`);
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)![1]);
    return { anon: kib("Anonymous") / 1024, pss: kib("Pss") / 1024 };
  } catch {
    return null;
  }
}

/** The kind of a sandbox's process, by its command line. */
function kind(cmdline: string): string {
  const argv = cmdline.split("\0");
  if (!argv[0].endsWith("deno")) return "other (bwrap, sh)";
  if (argv.some((a) => a.endsWith("supervisor.ts"))) return "supervisor";
  if (argv.some((a) => a.endsWith("host.ts"))) return "host";
  if (argv.some((a) => a.endsWith("server/main.ts"))) return "server (with the relay)";
  if (argv.some((a) => a.endsWith("relay.ts"))) return "relay (own process)";
  return "other deno";
}

/**
 * The kernel memory charged to a sandbox's cgroup in MiB (v1 `memory.kmem.usage_in_bytes`, v2
 * `kernel` of `memory.stat`), or null when the host has no such file: the supervisor stays
 * outside its cgroup, so this is the sandbox's own.
 */
function kernelMemory(cgroup: CgroupRef | undefined): number | null {
  if (!cgroup) return null;
  try {
    if (cgroup.version === 1) {
      const dir = cgroup.dirs.memory;
      if (!dir) return null;
      return Number(Deno.readTextFileSync(`${dir}/memory.kmem.usage_in_bytes`)) / 1048576;
    }
    const stat = Deno.readTextFileSync(`${cgroup.dirs.unified}/memory.stat`);
    const kernel = /^kernel (\d+)$/m.exec(stat);
    return kernel ? Number(kernel[1]) / 1048576 : null;
  } catch {
    return null;
  }
}

/**
 * Per kind: [anon, pss] summed over one sandbox's processes of that kind. A sandbox supervised by
 * its home's host (`host.ts`) counts the host's memory divided by the sandboxes it hosts
 * (`sharing`: sandboxes per host pid).
 */
async function breakdown(
  id: string,
  sharing: Map<number, number>,
): Promise<Map<string, [number, number]>> {
  const state = await readState(new SandboxDir(sandbarHome(), id));
  const out = new Map<string, [number, number]>();
  const supervisor = state?.supervisor?.pid;
  if (supervisor === undefined) return out;
  const kernel = kernelMemory(state?.cgroup);
  if (kernel !== null) out.set(KERNEL, [kernel, 0]);
  const add = (k: string, mem: { anon: number; pss: number }, share = 1) => {
    const [a, p] = out.get(k) ?? [0, 0];
    out.set(k, [a + mem.anon / share, p + mem.pss / share]);
  };
  let root = supervisor;
  if (state?.hosted && state.sandbox) {
    const host = rollup(supervisor);
    if (host) add("host (its share)", host, sharing.get(supervisor) ?? 1);
    root = state.sandbox.pid;
  }
  for (const pid of [root, ...descendants(root)]) {
    const cmdline = procCmdline(pid);
    const mem = rollup(pid);
    if (cmdline === null || mem === null) continue;
    add(kind(cmdline), mem);
  }
  return out;
}

/** Anonymous memory of an idle `deno run` (a timer and nothing else), in MiB. */
async function denoFloor(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--no-lock", "--no-prompt", "-"],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("setInterval(() => {}, 60_000);\n"));
  await writer.close();
  await new Promise((r) => setTimeout(r, 1500));
  const anon = rollup(child.pid)?.anon ?? NaN;
  child.kill("SIGKILL");
  await child.status;
  return anon;
}

/** Per kind, one value per sandbox: the breakdown of `sandboxes`, with their totals. */
async function breakdowns(sandboxes: Sandbox[]): Promise<Map<string, number[]>> {
  const kinds = new Map<string, number[]>();
  const add = (k: string, v: number) => kinds.set(k, [...kinds.get(k) ?? [], v]);
  const sharing = new Map<number, number>();
  for (const s of sandboxes) {
    const state = await readState(new SandboxDir(sandbarHome(), s.id));
    const pid = state?.hosted ? state.supervisor?.pid : undefined;
    if (pid !== undefined) sharing.set(pid, (sharing.get(pid) ?? 0) + 1);
  }
  for (const s of sandboxes) {
    const total: [number, number] = [0, 0];
    let kernel = 0;
    for (const [k, [anon, pss]] of await breakdown(s.id, sharing)) {
      if (k === KERNEL) {
        add(k, anon);
        kernel = anon;
        continue;
      }
      add(`${k} anon`, anon);
      add(`${k} pss`, pss);
      total[0] += anon;
      total[1] += pss;
    }
    add(HELD, total[0] + kernel);
    add(`= all its processes anon`, total[0]);
    add(`= all its processes pss`, total[1]);
  }
  return kinds;
}

/** What one round saw at one moment: the drop over 20 sandboxes and the breakdown per kind. */
interface Sample {
  drop: number;
  kinds: Map<string, number[]>;
}

/**
 * One round: 20 sandboxes that have each served a command, sampled `MOMENTS` seconds after the
 * last command; and the floor.
 */
async function round(): Promise<{ samples: Sample[]; floor: number }> {
  const floor = await denoFloor();
  await new Promise((r) => setTimeout(r, 1000));
  const before = memAvailableKiB();
  const sandboxes: Sandbox[] = [];
  const samples: Sample[] = [];
  try {
    for (let i = 0; i < SANDBOXES; i += 4) {
      sandboxes.push(
        ...await Promise.all([0, 1, 2, 3].map(() => Sandbox.create({ timeout: 300 }))),
      );
    }
    for (const s of sandboxes) await s.commands.run("true"); // each has served a command
    const served = Date.now();
    for (const at of MOMENTS) {
      await new Promise((r) => setTimeout(r, Math.max(0, at * 1000 - (Date.now() - served))));
      const drop = (before - memAvailableKiB()) / 1024 / SANDBOXES;
      samples.push({ drop, kinds: await breakdowns(sandboxes) });
    }
    return { samples, floor };
  } finally {
    await Promise.all(sandboxes.map((s) => s.kill()));
  }
}

/** The `memory` section: `runs` rounds (1 to 5), medians printed. */
export async function idleMemory(runs: number): Promise<void> {
  const rounds = Math.max(1, Math.min(5, runs));
  const drops: number[][] = MOMENTS.map(() => []);
  const floors: number[] = [];
  const kinds: Map<string, number[]>[] = MOMENTS.map(() => new Map());
  for (let i = 0; i < rounds; i++) {
    const r = await round();
    floors.push(r.floor);
    r.samples.forEach((sample, m) => {
      drops[m].push(sample.drop);
      for (const [k, values] of sample.kinds) {
        kinds[m].set(k, [...kinds[m].get(k) ?? [], median(values)]);
      }
    });
    await new Promise((r) => setTimeout(r, 2000)); // the kills' memory back before the next
  }
  const mib = (v: number) => `${v.toFixed(1)} MiB`;
  MOMENTS.forEach((at, m) => {
    const per = median(drops[m]);
    console.log(
      `memory per idle sandbox, ${at} s after its command (MemAvailable drop over ${SANDBOXES}), ` +
        `median of ${rounds}  ${mib(per)} (rounds: ${
          drops[m].map((d) => d.toFixed(1)).join(", ")
        })`,
    );
    const held = kinds[m].has(HELD) ? median(kinds[m].get(HELD)!) : null;
    console.log(
      `  goal < 40 MiB: by MemAvailable ${per < 40 ? "met" : "NOT met"} (other programs move it ` +
        `too); by anon + kernel memory ${
          held === null ? "unknown" : `${mib(held)}, ${held < 40 ? "met" : "NOT met"}`
        }`,
    );
    if (!kinds[m].has(KERNEL)) {
      console.log(
        "  (no kernel memory: no memory.kmem.usage_in_bytes (v1) or `kernel` in memory.stat " +
          "(v2) in the sandboxes' cgroups)",
      );
    }
    console.log("  per sandbox, by process (smaps_rollup; median over sandboxes, then rounds):");
    for (const [k, values] of [...kinds[m]].sort()) {
      console.log(`    ${k.padEnd(34)} ${mib(median(values))}`);
    }
  });
  console.log(`  floor: an idle deno run, anonymous                  ${mib(median(floors))}`);
}
