/**
 * Run `deno test` on some of this repository's test files inside a throwaway VM whose kernel has
 * one pure cgroup v2 hierarchy with the `cpu`, `memory` and `pids` controllers (most hosts'
 * shape; this project's CI host has its controllers on cgroup v1, and they cannot be moved while
 * the host's own cgroups use them). The VM boots the host's Debian kernel under QEMU with the
 * host's root file system shared read-only (9p) beneath a writable overlay in the VM's memory,
 * so it runs this very checkout with the same Deno, module cache and tools, and changes nothing
 * on the host. No network device: loopback only.
 *
 * QEMU runs with TCG (emulation): this project's host is itself a VM, and there a KVM guest made
 * no progress at all (nested virtualisation does not work), while TCG boots in about 5 s; code in
 * the VM runs several times slower than on the host. `SANDBAR_VM_ACCEL=kvm` tries KVM instead.
 *
 * From the command line (as root), for any test file:
 *
 * ```sh
 * deno run -A tests/vm/run.ts tests/sdk/local_sizes_test.ts [more files] [-- deno test flags]
 * ```
 *
 * It prints the test run's output and exits with its code (`SANDBAR_VM_MINUTES` bounds the run,
 * 20 by default; `SANDBAR_VM_MEMORY_MIB` sizes the VM, 2048 by default: its writes, `/tmp`
 * included, are held in that memory). A run is bounded: QEMU is killed when
 * the time is up, and the temporary files (initramfs, results share) are removed either way.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { onPath } from "../../sdk/providers/local/on_path.ts";
import { writeInitramfs } from "./initramfs.ts";

/** What a run in the VM gave back. */
export interface VmResult {
  /** The job's exit code; null when it never reported one (timeout, crash). */
  code: number | null;
  /** The test run's output (stdout and stderr). */
  log: string;
  /** The VM's serial console: the kernel's messages and the second stage's. */
  console: string;
  /** The test run's JUnit report, or null when it wrote none. */
  junit: string | null;
  /** Whether QEMU was killed because the time was up. */
  timedOut: boolean;
  /** Wall time of the whole run, boot included, in seconds. */
  seconds: number;
}

/** Options of {@linkcode runTestsInVm}. */
export interface VmOptions {
  /** Kill QEMU after this long (milliseconds). */
  timeoutMs: number;
  /** The VM's memory in MiB (default 2048). */
  memoryMiB?: number;
  /** The VM's CPUs (default 2). */
  cpus?: number;
  /** More `deno test` flags (`--filter`, ...). */
  denoArgs?: string[];
}

const REPO = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");
const SECOND_STAGE = join(REPO, "tests/vm/guest_init.sh");
const QEMU = "qemu-system-x86_64";

/** The kernel to boot: its image and release, or why there is none. */
function kernel(): { image: string; release: string } | { missing: string } {
  const explicit = Deno.env.get("SANDBAR_VM_KERNEL");
  const images: string[] = [];
  if (explicit) images.push(explicit);
  else {
    try {
      for (const e of Deno.readDirSync("/boot")) {
        if (e.name.startsWith("vmlinuz-")) images.push(join("/boot", e.name));
      }
    } catch { /* no /boot */ }
  }
  for (const image of images.sort().reverse()) {
    const release = image.slice(image.lastIndexOf("vmlinuz-") + "vmlinuz-".length);
    try {
      Deno.statSync(`/lib/modules/${release}/kernel/fs/9p/9p.ko`);
      Deno.statSync(image);
      return { image, release };
    } catch { /* a kernel without its 9p module here */ }
  }
  return {
    missing: "a kernel image /boot/vmlinuz-<release> with its modules in /lib/modules/<release> " +
      "(9p among them): apt-get install linux-image-amd64",
  };
}

/**
 * Why tests cannot run in the VM on this host, or null when they can: QEMU on PATH, a kernel with
 * its modules, x86-64, root (the 9p share passes the host's file owners through).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { vmUnavailable } from "./run.ts";
 * const why = vmUnavailable();
 * assert.ok(why === null || why.length > 0);
 * ```
 */
export function vmUnavailable(): string | null {
  if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64") return "needs Linux on x86-64";
  if (Deno.uid() !== 0) return "needs root (the VM shares the host's files with their owners)";
  if (onPath(QEMU) === null) return `needs ${QEMU} on PATH: apt-get install qemu-system-x86`;
  const k = kernel();
  return "missing" in k ? `needs ${k.missing}` : null;
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The job the second stage runs: this checkout's `deno test` on `files`, as this process has it. */
function job(files: string[], denoArgs: string[]): string {
  const keep = ["HOME", "DENO_DIR", "PATH", "NPM_CONFIG_CACHE", "XDG_CACHE_HOME"];
  const env = keep.flatMap((k) => {
    const v = Deno.env.get(k);
    return v === undefined ? [] : [`export ${k}=${shellQuote(v)}`];
  });
  const argv = [
    Deno.execPath(),
    "test",
    "-A",
    "--junit-path=/run/vm/junit.xml",
    ...denoArgs,
    ...files,
  ];
  return [
    `cd ${shellQuote(REPO)} || exit 120`,
    ...env,
    "export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1",
    `exec ${argv.map(shellQuote).join(" ")}`,
    "",
  ].join("\n");
}

function readOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/**
 * Boot the VM, run `deno test -A` on `files` (paths relative to the repository) in it as root,
 * and give back what it reported. Throws when the VM cannot be run here (see
 * {@linkcode vmUnavailable}).
 */
export async function runTestsInVm(files: string[], options: VmOptions): Promise<VmResult> {
  const why = vmUnavailable();
  if (why !== null) throw new Error(`tests cannot run in a VM here: ${why}`);
  const k = kernel() as { image: string; release: string };
  const started = performance.now();
  const tmp = await Deno.makeTempDir({ prefix: "sandbar-vm-" });
  const results = join(tmp, "results");
  const initrd = join(tmp, "initramfs.cpio");
  let timedOut = false;
  let consoleText = "";
  try {
    await Deno.mkdir(results);
    await Deno.writeTextFile(join(results, "job.sh"), job(files, options.denoArgs ?? []));
    await writeInitramfs(initrd, k.release, SECOND_STAGE);
    const accel = Deno.env.get("SANDBAR_VM_ACCEL") === "kvm" ? "kvm" : "tcg,thread=multi";
    const qemu = new Deno.Command(QEMU, {
      args: [
        ...["-accel", accel, "-cpu", "max"],
        ...["-m", `${options.memoryMiB ?? 2048}`, "-smp", `${options.cpus ?? 2}`],
        ...["-nodefaults", "-no-reboot", "-display", "none", "-monitor", "none"],
        ...["-serial", "stdio"],
        ...["-kernel", k.image, "-initrd", initrd],
        ...[
          "-append",
          "console=ttyS0 panic=-1 cgroup_no_v1=all rdinit=/init quiet loglevel=4",
        ],
        ...[
          "-virtfs",
          "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap",
        ],
        ...["-virtfs", `local,path=${results},mount_tag=results,security_model=passthrough`],
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        qemu.kill("SIGKILL");
      } catch { /* ended meanwhile */ }
    }, options.timeoutMs);
    const out = await qemu.output();
    clearTimeout(timer);
    consoleText = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    const rc = readOrNull(join(results, "rc"));
    return {
      code: rc === null || rc.trim() === "" ? null : Number(rc.trim()),
      log: readOrNull(join(results, "log")) ?? "",
      console: consoleText,
      junit: readOrNull(join(results, "junit.xml")),
      timedOut,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--");
  const files = at < 0 ? Deno.args : Deno.args.slice(0, at);
  const denoArgs = at < 0 ? [] : Deno.args.slice(at + 1);
  if (files.length === 0) {
    console.error("usage: deno run -A tests/vm/run.ts <test files> [-- <deno test flags>]");
    Deno.exit(2);
  }
  const minutes = Number(Deno.env.get("SANDBAR_VM_MINUTES") ?? "20");
  const memoryMiB = Number(Deno.env.get("SANDBAR_VM_MEMORY_MIB") ?? "2048");
  const r = await runTestsInVm(files, { timeoutMs: minutes * 60_000, denoArgs, memoryMiB });
  console.log(r.log);
  if (r.code === null) console.log(r.console);
  console.log(
    `vm: ${r.timedOut ? `killed after ${minutes} min` : `exit ${r.code}`} in ${
      r.seconds.toFixed(0)
    } s`,
  );
  Deno.exit(r.code ?? 1);
}
