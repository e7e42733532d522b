/**
 * No code from a writable path: the calling thread gets a mount namespace of its own
 * (`unshare(CLONE_NEWNS)`, which acts on the calling thread alone) in which each writable tree
 * is bind-mounted onto itself `noexec`. Every process the thread starts inherits the namespace,
 * so the kernel refuses to map a file from those trees executable: not only `execve` (which
 * Landlock's `EXECUTE` right already covers), but the dynamic loader's `mmap(PROT_EXEC)` of a
 * library named by `LD_PRELOAD`, `LD_LIBRARY_PATH` or `LD_AUDIT`, and `dlopen` from a program.
 * Under `allow_commands` that is what keeps an allowed program from running a library of the
 * caller's, whatever spelling got the variable past the string guard.
 *
 * Needs `CAP_SYS_ADMIN` (the server running as root). Where the thread may not make a mount
 * namespace (an unprivileged server, a local sandbox's bubblewrap namespace), it says why and
 * nothing changes: the string guard and the environment scrub still hold.
 *
 * Runs on a spawner worker's own thread only (see `spawner_worker.ts`), before Landlock, which
 * forbids mounting once in force.
 *
 * @module
 */

const CLONE_NEWNS = 0x00020000;
const MS_RDONLY = 1n;
const MS_NOSUID = 2n;
const MS_NODEV = 4n;
const MS_NOEXEC = 8n;
const MS_REMOUNT = 32n;
const MS_NOATIME = 1024n;
const MS_NODIRATIME = 2048n;
const MS_BIND = 4096n;
const MS_REC = 16384n;
const MS_SLAVE = 1n << 19n;
const MS_RELATIME = 1n << 21n;
/** `statvfs.f_flag` bits (`ST_*`) and the mount flags that keep them. */
const KEPT: readonly [bigint, bigint][] = [
  [1n, MS_RDONLY],
  [2n, MS_NOSUID],
  [4n, MS_NODEV],
  [1024n, MS_NOATIME],
  [2048n, MS_NODIRATIME],
  [4096n, MS_RELATIME],
];
/** Offset of `f_flag` in glibc's `struct statvfs` on 64-bit Linux. */
const F_FLAG_OFFSET = 72;

const SYMBOLS = {
  unshare: { parameters: ["i32"], result: "i32" },
  mount: { parameters: ["buffer", "buffer", "buffer", "u64", "pointer"], result: "i32" },
  statvfs: { parameters: ["buffer", "buffer"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/**
 * Give the calling thread a mount namespace in which every tree of `paths` is `noexec` (and
 * `nosuid`). Returns null when done, or why it could not be (nothing changed then, or the
 * namespace is the thread's own but some tree kept its flags: the message names it).
 *
 * @example
 * ```ts ignore
 * // Only ever on a spawner worker's own thread.
 * const why = mountNoexec(["/workspace"]);
 * ```
 */
export function mountNoexec(paths: readonly string[]): string | null {
  if (paths.length === 0) return null;
  if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64" && Deno.build.arch !== "aarch64") {
    return `no mount namespaces on ${Deno.build.os}/${Deno.build.arch}`;
  }
  const lib = Deno.dlopen("libc.so.6", SYMBOLS);
  try {
    const c = lib.symbols;
    const errno = () => {
      const p = c.__errno_location();
      return p === null ? 0 : new Deno.UnsafePointerView(p).getInt32();
    };
    if (c.unshare(CLONE_NEWNS) !== 0) return `unshare(CLONE_NEWNS) failed (errno ${errno()})`;
    // Nothing done here may reach the server's namespace; mounts made there still arrive here.
    const root = cString("/");
    if (c.mount(cString("none"), root, null, MS_REC | MS_SLAVE, null) !== 0) {
      return `making / a slave mount failed (errno ${errno()})`;
    }
    const failed: string[] = [];
    const buf = new Uint8Array(112);
    for (const path of paths) {
      const p = cString(path);
      if (c.statvfs(p, buf) !== 0) continue; // not there: nothing to mount
      const flags = new DataView(buf.buffer).getBigUint64(F_FLAG_OFFSET, true);
      let keep = 0n;
      for (const [st, ms] of KEPT) if (flags & st) keep |= ms;
      if (c.mount(p, p, null, MS_BIND | MS_REC, null) !== 0) {
        failed.push(`${path} (bind, errno ${errno()})`);
        continue;
      }
      const remount = MS_REMOUNT | MS_BIND | MS_NOEXEC | MS_NOSUID | keep;
      if (c.mount(null, p, null, remount, null) !== 0) {
        failed.push(`${path} (remount, errno ${errno()})`);
      }
    }
    return failed.length ? `could not mount noexec: ${failed.join(", ")}` : null;
  } finally {
    lib.close();
  }
}
