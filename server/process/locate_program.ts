/**
 * Finding a program on `PATH` the way `execvp` and bash do, before anything is started: so a
 * missing program is a clear `process_invalid` or `command_invalid`, and the native spawn does
 * not search twice.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { libcAvailable } from "../libc/index.ts";
import { isExecutableFile } from "../pty/executable.ts";

/**
 * Whether `path` is an executable file; `undefined` when the server may not look. Asked of the
 * kernel through libc where it can be (no Deno permission check, no stat object, no error
 * object for each directory of `PATH` that lacks the program), else through `Deno.statSync`.
 */
function executable(path: string): boolean | undefined {
  if (libcAvailable()) return isExecutableFile(path);
  try {
    const st = Deno.statSync(path);
    return st.isFile && st.mode !== null && (st.mode & 0o111) !== 0;
  } catch (e) {
    // The narrowed server may not read every PATH directory (a pyenv under /root, say).
    return e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory
      ? false
      : undefined;
  }
}

/**
 * The directories `execvp` and bash search for a program, in order. An empty entry is the
 * current directory; a relative one is relative to the process's `cwd` (the request's), not the
 * server's.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchDirs } from "./locate_program.ts";
 * assert.deepEqual(searchDirs("bin::/usr/bin", "/work"), ["/work/bin", "/work", "/usr/bin"]);
 * ```
 */
export function searchDirs(path: string | undefined, cwd: string): string[] {
  if (path === undefined) return [];
  return path.split(":").map((dir) => dir.startsWith("/") ? dir : resolve(cwd, dir || "."));
}

/**
 * Where bash would find `name` on `PATH` (relative to `cwd` for a name with a slash): the path,
 * `null` when it is nowhere, `undefined` when a directory the server may not read comes first.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { locateProgram } from "./locate_program.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/tool`, "#!/bin/sh\n", { mode: 0o755 });
 * assert.equal(locateProgram("tool", "/", dir), `${dir}/tool`);
 * assert.equal(locateProgram("no-such-tool", "/", dir), null);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function locateProgram(
  name: string,
  cwd: string,
  path: string | undefined,
): string | null | undefined {
  if (name.includes("/")) {
    const ok = executable(resolve(cwd, name));
    return ok === undefined ? undefined : ok ? name : null;
  }
  for (const dir of searchDirs(path, cwd)) {
    const candidate = join(dir, name);
    const ok = executable(candidate);
    if (ok === undefined) return undefined;
    if (ok) return candidate;
  }
  return null;
}

/**
 * Check that the program of an exec-form argv exists, as `execvp` would find it; throws
 * `Deno.errors.NotFound` when it is surely nowhere (so the caller can answer `process_invalid`
 * rather than a run that failed inside the `setsid` wrapper). When the server may not look, the
 * run goes ahead and `setsid` reports a missing program (exit 1, on stderr).
 */
export function resolveProgram(name: string, cwd: string, path: string | undefined): void {
  if (locateProgram(name, cwd, path) === null) throw new Deno.errors.NotFound(`${name} not found`);
}
