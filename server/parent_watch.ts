/**
 * Ending with whatever started the server. `npx` (and some other wrappers) do not forward SIGTERM,
 * so killing the process a user started leaves Deno running and holding the ports. The server
 * watches its parent instead: when the parent is gone the kernel re-parents the server (to init or
 * a subreaper), its parent id changes, and the server stops as it would on SIGTERM.
 *
 * Polling `Deno.ppid` is chosen over `PR_SET_PDEATHSIG`: that signal fires when the parent
 * *thread* that forked ends, and a runtime that spawns from a worker thread would end the server
 * while its parent lives on.
 *
 * @module
 */

/**
 * Calls `onGone` once when this process's parent has exited (checked every `intervalMs`). Returns
 * the function that stops watching. A process started by init itself has nothing to watch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { watchParent } from "./parent_watch.ts";
 * let gone = false;
 * const stop = watchParent(() => gone = true, 10);
 * await new Promise((resolve) => setTimeout(resolve, 30));
 * assert.equal(gone, false); // the test runner is still here
 * stop();
 * ```
 */
export function watchParent(onGone: () => void, intervalMs = 250): () => void {
  const parent = Deno.ppid;
  if (parent <= 1) return () => {};
  const timer = setInterval(() => {
    if (Deno.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}
