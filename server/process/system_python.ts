/**
 * Finding the system's Python on purpose: `/usr/bin/python3` first, then the first `python3`
 * of the system directories, each kept only when it runs a probe. Never through a `PATH` a
 * caller set, nor a user's shim (a pyenv shim under a home directory is first on some
 * machines' `PATH`, and confined processes cannot run it): the probe runs with the server's
 * own tool `PATH`, on the `system` confinement where there is one.
 *
 * @module
 */

import type { Spawner } from "../confine/spawner.ts";
import { SERVER_TOOL_PATH } from "./environment.ts";
import { toolOutput } from "./run.ts";

/** Where a system Python is looked for, in order. */
export const PYTHON_CANDIDATES: readonly string[] = ["/usr/bin/python3", "python3"];

/**
 * The first candidate for which `python -c <probe>` exits 0, as its `sys.executable`; null when
 * none does. `probe` is Python code; it must not print.
 *
 * @example A Python that has the standard library's `venv`
 * ```ts
 * import assert from "node:assert/strict";
 * import { findSystemPython } from "./system_python.ts";
 * const python = await findSystemPython("import venv");
 * assert.ok(python === null || python.startsWith("/"));
 * assert.equal(await findSystemPython("raise SystemExit(1)"), null);
 * ```
 */
export async function findSystemPython(probe: string, spawner?: Spawner): Promise<string | null> {
  const env = { PATH: SERVER_TOOL_PATH };
  for (const candidate of PYTHON_CANDIDATES) {
    const out = await toolOutput(
      [candidate, "-c", `${probe}\nimport sys; print(sys.executable)`],
      env,
      10000,
      "/",
      spawner,
    );
    if (out?.trim()) return out.trim();
  }
  return null;
}
