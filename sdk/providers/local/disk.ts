/**
 * A local sandbox's disk: everything it can write (`/home/user`, `/tmp`, `/run/sandbar`) lives on
 * one ext4 file system in a sparse image file of the sandbox's directory, loop-mounted at
 * `disk/`, so the `disk` size is a hard cap the kernel enforces (a write past it fails with
 * ENOSPC inside, and nothing outside the image is touched).
 *
 * Why an image rather than the alternatives: a tmpfs with `size=` (bubblewrap's `--size`) is
 * memory, charged to the sandbox's memory limit, and gone when its mount namespace ends, so a
 * paused sandbox's files could not outlive its supervisor; project quotas need a file system
 * mounted with `prjquota`, which the host's is not by default. An image costs about 4.5 ms to make
 * (a sparse copy of an empty one, {@linkcode makeImage}) and 8 ms to mount, takes on the host only
 * what is written, and survives the host: a sandbox paused when its supervisor dies is mounted
 * again on resume.
 *
 * Mounting needs root (and `mkfs.ext4`, `mount`, a loop device); elsewhere {@linkcode
 * diskSupport} says why, a sandbox that asks for `disk` is refused, and the writable areas are
 * plain directories of the sandbox's directory without a cap.
 *
 * @module
 */

import { join } from "node:path";
import { onPath } from "./on_path.ts";
import { removeTree, type SandboxDir } from "./state.ts";

/** Whether this host can cap sandboxes' disks, or why not. */
export type DiskSupport = { ok: true } | { ok: false; reason: string };

let detected: DiskSupport | undefined;

/** Whether disk caps can be made here (read once per process). */
export function diskSupport(): DiskSupport {
  return detected ??= detect();
}

function detect(): DiskSupport {
  if (Deno.build.os !== "linux") return { ok: false, reason: "loop mounts are a Linux feature" };
  if (Deno.uid() !== 0) {
    return { ok: false, reason: "mounting the sandbox's disk image needs root" };
  }
  for (const name of ["mkfs.ext4", "mount", "umount"]) {
    if (!tool(name)) {
      return { ok: false, reason: `${name} is not installed (apt-get install e2fsprogs mount)` };
    }
  }
  try {
    Deno.statSync("/dev/loop-control");
  } catch {
    return { ok: false, reason: "no loop devices (/dev/loop-control is missing)" };
  }
  return { ok: true };
}

/** A system program: on PATH, else in the sbin directories a user's PATH may lack. */
function tool(name: string): string | null {
  const found = onPath(name);
  if (found) return found;
  for (const dir of ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) {
    try {
      if (Deno.statSync(join(dir, name)).isFile) return join(dir, name);
    } catch { /* next */ }
  }
  return null;
}

async function run(argv: string[]): Promise<void> {
  const out = await new Deno.Command(tool(argv[0]) ?? argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`${argv.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/** Whether `dir` is a mount point now. */
export function isMounted(dir: string): boolean {
  try {
    const text = Deno.readTextFileSync("/proc/self/mountinfo");
    return text.split("\n").some((line) => line.split(" ")[4] === dir);
  } catch {
    return false;
  }
}

/**
 * Make an empty ext4 image of `mb` MiB at `image`: a sparse copy (`cp --sparse=always`, about
 * 4.5 ms) of the template of that size in `templates`, which `mkfs.ext4` (about 8 ms) makes once
 * per size and home. The copies share the template's file system UUID and directory hash seed:
 * nothing inside a sandbox reads them (it has no device of its disk), and each copy is a file
 * system of its own, mounted for one sandbox.
 */
export async function makeImage(image: string, mb: number, templates: string): Promise<void> {
  const template = join(templates, `ext4-${mb}m.img`);
  if (!(await Deno.stat(template).catch(() => null))?.isFile) {
    await Deno.mkdir(templates, { recursive: true, mode: 0o700 });
    // Made beside it, then renamed into place whole: creates racing it each make their own.
    const temp = `${template}.${crypto.randomUUID()}.new`;
    try {
      await makeEmptyImage(temp, mb);
      await Deno.rename(temp, template);
    } finally {
      await Deno.remove(temp).catch(() => {});
    }
  }
  await run(["cp", "--sparse=always", template, image]);
}

/** `mkfs.ext4` of a new sparse file of `mb` MiB at `image` (it takes only what is written). */
async function makeEmptyImage(image: string, mb: number): Promise<void> {
  const file = await Deno.open(image, { createNew: true, write: true, mode: 0o600 });
  try {
    await file.truncate(mb * 1024 * 1024);
  } finally {
    file.close();
  }
  // -m 0: no blocks reserved for root (the sandbox gets all of its size). The inode tables and
  // the journal are left unzeroed: the file is sparse, so they read as zeros anyway (17 ms and
  // 1.2 MB on the host for 2 GiB, against 31 ms and 65 MB zeroing the journal).
  const lazy = "lazy_itable_init=1,lazy_journal_init=1";
  await run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", lazy, image]);
}

/** Mount the image at `dir` (no device files, no set-uid), unless it is mounted already. */
export async function mountImage(image: string, dir: string): Promise<void> {
  if (isMounted(dir)) return;
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  await run(["mount", "-o", "loop,nodev,nosuid", image, dir]);
}

/** Unmount `dir` if it is mounted (lazily when busy); the loop device goes with it. */
export async function unmount(dir: string): Promise<void> {
  if (!isMounted(dir)) return;
  await run(["umount", dir]).catch(() => run(["umount", "-l", dir]));
}

/** Bytes used and the size of the file system at `dir` (`df`), or nulls. */
export async function diskUsage(dir: string): Promise<{ used: number; size: number } | null> {
  try {
    const out = await new Deno.Command("df", {
      args: ["-P", "-B1", "--", dir],
      stdout: "piped",
      stderr: "null",
    }).output();
    const row = new TextDecoder().decode(out.stdout).trim().split("\n")[1]?.split(/\s+/);
    if (!row) return null;
    return { size: Number(row[1]), used: Number(row[2]) };
  } catch {
    return null;
  }
}

/** The directories every sandbox disk holds: its home, its `/tmp`, its run directory. */
export const DISK_DIRS = ["home", "tmp", "run"];

/** Where a sandbox's disk is mounted under its directory. */
export function diskDir(sandboxDir: string): string {
  return join(sandboxDir, "disk");
}

/** Remove a sandbox's files for good: its disk unmounted first, then its directory. */
export async function removeSandboxFiles(dir: SandboxDir): Promise<void> {
  await unmount(dir.disk).catch(() => {});
  await removeTree(dir.path);
}

/**
 * Make the sandbox's disk: an image of `mb` MiB mounted at its `disk/` (or, with `mb` null, a
 * plain directory), holding its home, `/tmp` and run directory.
 */
export async function prepareDisk(
  dir: SandboxDir,
  mb: number | null,
  templates: string,
): Promise<void> {
  if (mb !== null) {
    await makeImage(dir.image, mb, templates);
    await mountImage(dir.image, dir.disk);
  } else {
    await Deno.mkdir(dir.disk, { mode: 0o755 });
  }
  await Deno.mkdir(dir.root, { mode: 0o755 });
  await Deno.mkdir(dir.tmp, { mode: 0o700 });
  await Deno.mkdir(dir.run, { mode: 0o700 });
}
