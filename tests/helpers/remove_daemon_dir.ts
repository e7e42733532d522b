/**
 * Removing the directory a test's daemon (dockerd, a Podman service) kept its state in: every
 * mount below it unmounted first, deepest first (overlays, volumes, `/run` binds), then the
 * directory itself. Nothing is thrown: what is already gone is fine.
 *
 * @module
 */

/** Unmount everything mounted below `dir`, deepest first, then remove `dir`. */
export async function removeDaemonDir(dir: string): Promise<void> {
  const mounts = (await Deno.readTextFile("/proc/mounts")).split("\n")
    .map((l) => l.split(" ")[1]).filter((m) => m?.startsWith(dir)).sort().reverse();
  for (const m of mounts) {
    await new Deno.Command("umount", { args: ["-l", m] }).output().catch(() => {});
  }
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
