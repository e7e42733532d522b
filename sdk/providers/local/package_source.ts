/**
 * Where the local provider runs its own programs (the server, the relay, the supervisor) from:
 * the package on disk when it was loaded from a checkout (`file:`), or the package's module URLs
 * when it was loaded from a registry (`jsr:`, which Deno resolves to `https://jsr.io/…`) or any
 * other HTTP host.
 *
 * A sandbox has no network, so a package loaded by URL is run from Deno's cache: before the
 * first sandbox, `deno cache` puts every module the sandbox needs there (once per process and
 * package), and inside the sandbox the cache is mounted read-only and Deno runs with
 * `--cached-only`. Modules are run with `--no-config`: a registry serves them with their
 * specifiers already resolved (`deno publish` writes `npm:hono@4…` where the source says
 * `hono`), so they need no import map, and a configuration file in the caller's directory
 * (its import map, its lock file) must not change what the sandbox runs.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's own programs, by path on disk or by URL. */
export interface PackageSource {
  /** The package's root directory on disk, or null when it was loaded by URL. */
  readonly dir: string | null;
  /** A module of the package (`server/main.ts`) as `deno run` takes it: a path or a URL. */
  module(path: string): string;
  /** Flags for `deno run` of one of its modules (`--no-config --cached-only --allow-import=<host>` for
   * a URL). */
  readonly runFlags: readonly string[];
}

const ROOT = new URL("../../../", import.meta.url);

/**
 * This package's source.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { packageSource } from "./package_source.ts";
 * const source = packageSource();
 * assert.ok(source.module("server/main.ts").endsWith("server/main.ts"));
 * ```
 */
export function packageSource(): PackageSource {
  if (ROOT.protocol === "file:") {
    const dir = fileURLToPath(ROOT).replace(/\/$/, "");
    return { dir, module: (path) => join(dir, path), runFlags: [] };
  }
  return {
    dir: null,
    module: (path) => new URL(path, ROOT).href,
    // A host other than the registries Deno trusts by default needs `--allow-import`.
    runFlags: ["--no-config", "--cached-only", `--allow-import=${ROOT.host}`],
  };
}

/**
 * The modules the local and docker providers run: the server and the relays (inside the
 * sandbox), and the host, the supervisor and the docker egress keeper (on the host); and the server's workers, which `deno cache` cannot find from
 * `server/main.ts` because a worker is started by URL at run time (the confinement's spawner
 * thread, the content search's regex worker).
 */
export const SANDBOX_MODULES = [
  "server/main.ts",
  "sdk/providers/local/relay.ts",
  "sdk/providers/local/supervisor.ts",
  "sdk/providers/local/host.ts",
  "sdk/providers/docker/relay.ts",
  "sdk/providers/docker/egress_keeper.ts",
  "sdk/providers/local/pool_fill.ts",
  "server/confine/spawner_worker.ts",
  "server/files/regex_worker.ts",
];

const cached = new Set<string>();

/**
 * Put the modules a sandbox runs into Deno's cache (`DENO_DIR`), when the package was loaded by
 * URL; nothing for a package on disk. Done once per process: `deno cache` of a cached graph
 * still takes a Deno start-up.
 */
export async function cacheSandboxModules(source: PackageSource, denoDir: string): Promise<void> {
  if (source.dir !== null) return;
  const modules = SANDBOX_MODULES.map((m) => source.module(m));
  const key = `${denoDir}\n${modules.join("\n")}`;
  if (cached.has(key)) return;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["cache", "--no-config", "--no-lock", "--quiet", ...modules],
    env: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().slice(-2000);
    throw new Error(`Could not cache the sandbox's modules (${modules[0]}): ${why}`);
  }
  cached.add(key);
}
