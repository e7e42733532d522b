/**
 * Deno's caches filled on the host for the modules a sandbox of a checkout runs, before it starts.
 *
 * Inside a sandbox `DENO_DIR` is read-only. A module whose dependency analysis (Deno's
 * `dep_analysis_cache`) or emitted JavaScript (`gen/`) is not in it is parsed and transpiled in
 * the server's own process at every start, and that memory stays: measured, an idle sandbox's
 * server held about 66 MiB of anonymous memory instead of 46 after any change to the checkout
 * (and in a fresh clone) until some host process happened to load the same graph. So, once per
 * package (the pool's fingerprint: Deno's version and the size and time of every module file)
 * and `SANDBAR_HOME`, `deno cache` runs on the host with the server's own configuration, and a
 * stamp file says it was done. A package loaded by URL is cached by `cacheSandboxModules`.
 *
 * @module
 */

import { join } from "node:path";
import { type PackageSource, SANDBOX_MODULES } from "./package_source.ts";
import { packageFingerprint } from "./pool.ts";

let warmed: Promise<void> | undefined;

/**
 * Fill Deno's caches (`denoDir`) for the sandbox's modules of the checkout `source`, unless a
 * stamp under `home` says this package was done. Once per process; a failure costs memory and
 * start time only, so it is not an error (and no stamp is written).
 */
export function warmModuleCache(source: PackageSource, denoDir: string, home: string) {
  if (source.dir === null) return Promise.resolve();
  const dir = source.dir;
  return warmed ??= (async () => {
    const stamp = join(home, "module-cache", await packageFingerprint());
    if (await Deno.stat(stamp).then(() => true, () => false)) return;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "cache",
        "--config",
        join(dir, "deno.json"),
        "--quiet",
        ...SANDBOX_MODULES.map((m) => source.module(m)),
        // Imported at run time by `server/main.ts`; named so its graph is analysed for certain.
        source.module("server/serve.ts"),
      ],
      env: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output().catch(() => null);
    if (!out?.success) return;
    const stamps = join(home, "module-cache");
    await Deno.mkdir(stamps, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(stamp, "").catch(() => {});
    // One stamp is enough: the packages before this one need no record.
    for await (const e of Deno.readDir(stamps)) {
      if (join(stamps, e.name) !== stamp) await Deno.remove(join(stamps, e.name)).catch(() => {});
    }
  })();
}
