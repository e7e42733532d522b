/**
 * Finding a program on PATH. Its own module so that the supervisor (`disk.ts`, `spawn.ts`) does
 * not load the launch plan, and through it the server's policy compiler, to find `mount` or
 * `setsid`.
 *
 * @module
 */

import { join } from "node:path";

/**
 * The path of program `name` on PATH, or null.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { onPath } from "./on_path.ts";
 * assert.ok(onPath("sh")?.endsWith("/sh"));
 * assert.equal(onPath("no-such-program-here"), null);
 * ```
 */
export function onPath(name: string): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")) {
    const candidate = join(dir || ".", name);
    try {
      if (Deno.statSync(candidate).isFile) return candidate;
    } catch { /* next */ }
  }
  return null;
}
