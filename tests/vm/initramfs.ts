/**
 * The test VM's initramfs: just enough to mount the host's root file system, shared read-only
 * over 9p, under a writable overlay in the VM's memory, and hand over to the second stage
 * (`guest_init.sh`, from that root).
 *
 * Made on each run from the host's own files, nothing installed and nothing in `/boot` touched:
 * `dash`, `kmod` (as `insmod`), `mount`, `mkdir` and `switch_root` with the libraries `ldd`
 * names, and the modules `modprobe --show-depends` lists for 9p over virtio and overlayfs (the
 * Debian kernel builds them as modules, and its own initrd has none of them). Everything else
 * (ext4, loop) the second stage loads from the shared root's `/lib/modules`.
 *
 * @module
 */

import { type CpioEntry, cpioNewc } from "./cpio.ts";

/** Modules the first stage loads, with what they depend on. */
const MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay"];

/** Programs the first stage runs: the path inside the image, and where it comes from. */
const PROGRAMS: [string, string][] = [
  ["/bin/sh", "/bin/dash"],
  ["/bin/insmod", "/bin/kmod"],
  ["/bin/mount", "/bin/mount"],
  ["/bin/mkdir", "/bin/mkdir"],
  ["/bin/switch_root", "/sbin/switch_root"],
];

/** Options of the 9p mounts (the root, and the share the results come back through). */
export const NINE_P_OPTIONS = "trans=virtio,version=9p2000.L,msize=524288";

async function output(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** The shared libraries `ldd` says `program` loads, as the paths it names them by. */
async function libraries(program: string): Promise<string[]> {
  const text = await output("ldd", [program]);
  return [...text.matchAll(/(?:=> )?(\/\S+) \(0x/g)].map((m) => m[1]);
}

/** The `.ko` files to load for `MODULES` on kernel `release`, in order, each once. */
async function modules(release: string): Promise<string[]> {
  const text = await output("modprobe", ["-S", release, "-a", "--show-depends", ...MODULES]);
  const files = [...text.matchAll(/^insmod (\S+)/gm)].map((m) => m[1]);
  return [...new Set(files)];
}

/** The first stage's `/init`: mount the root, overlay it, and `exec` the second stage. */
function init(secondStage: string): string {
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  return `#!/bin/sh
fail() { echo "vm-stage1: $*"; echo o > /proc/sysrq-trigger; exit 1; }
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
for m in /modules/*.ko; do insmod "$m" || fail "insmod $m"; done
mount -t 9p -o ${NINE_P_OPTIONS},ro,cache=loose hostroot /lower || fail "the 9p root"
mount -t tmpfs -o mode=755 upper /upper || fail "tmpfs"
mkdir /upper/rw /upper/work
mount -t overlay -o lowerdir=/lower,upperdir=/upper/rw,workdir=/upper/work root /newroot ||
  fail "the overlay"
exec switch_root /newroot /bin/sh ${q(secondStage)}
`;
}

/**
 * Write the initramfs for kernel `release` to `path`; the second stage it hands over to is
 * `secondStage`, a path in the host's (shared) root.
 */
export async function writeInitramfs(
  path: string,
  release: string,
  secondStage: string,
): Promise<void> {
  const entries: CpioEntry[] = [];
  const dirs = new Set<string>();
  const dir = (p: string) => {
    const parts = p.split("/").filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const d = `/${parts.slice(0, i).join("/")}`;
      if (!dirs.has(d)) {
        dirs.add(d);
        entries.push({ kind: "dir", path: d });
      }
    }
  };
  const file = async (inside: string, from: string, mode = 0o755) => {
    dir(inside.slice(0, inside.lastIndexOf("/")));
    entries.push({ kind: "file", path: inside, data: await Deno.readFile(from), mode });
  };
  for (const d of ["/dev", "/proc", "/sys", "/lower", "/upper", "/newroot", "/modules"]) dir(d);
  entries.push({ kind: "char", path: "/dev/console", major: 5, minor: 1 });
  const libs = new Set<string>();
  for (const [inside, from] of PROGRAMS) {
    await file(inside, from);
    for (const lib of await libraries(from)) libs.add(lib);
  }
  for (const lib of libs) await file(lib, lib);
  const kos = await modules(release);
  for (const [i, ko] of kos.entries()) {
    const name = ko.slice(ko.lastIndexOf("/") + 1);
    await file(`/modules/${String(i).padStart(2, "0")}-${name}`, ko, 0o644);
  }
  entries.push({
    kind: "file",
    path: "/init",
    data: new TextEncoder().encode(init(secondStage)),
    mode: 0o755,
  });
  await Deno.writeFile(path, cpioNewc(entries));
}
