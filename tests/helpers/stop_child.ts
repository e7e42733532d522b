/**
 * Stopping a daemon a test started (dockerd, a Podman service): SIGTERM, then SIGKILL if it has
 * not ended within its grace time, and wait until it has.
 *
 * @module
 */

/** End `child`: SIGTERM, SIGKILL after `graceMs`, and its exit awaited. */
export async function stopChild(child: Deno.ChildProcess, graceMs: number): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch { /* gone */ }
  const killed = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, graceMs);
  await child.status;
  clearTimeout(killed);
}
