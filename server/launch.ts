/**
 * The command line of a narrowed server: `deno run` with the permission flags the policy implies
 * (see `server/permissions/`), the package's import map, and `server/main.ts --no-narrow`, so the
 * process that starts serves at once under those permissions. The launcher in `server/main.ts`
 * and the SDK's local provider both start the server this way.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type AgentsConfig, upstreamHost } from "./agents/config.ts";
import { permissionFlags } from "./permissions/index.ts";
import type { CompiledPolicy } from "./policy/compile.ts";

/** What the command line is made from. */
export interface NarrowedServerInputs {
  /** The Deno binary to run (as seen where the server runs); default `Deno.execPath()`. */
  deno?: string;
  /** The package directory holding `deno.json` and `server/main.ts`; default this package. */
  packageDir?: string;
  /** The compiled policy the permissions follow. */
  policy: CompiledPolicy;
  /** The server's root directory. */
  root: string;
  /** The listening host. */
  host: string;
  /** The server's private state directory. */
  stateDir: string;
  /** A `--commands` file. */
  commandsFile?: string;
  /** The policy file. */
  policyFile?: string;
  /** An audit log file. */
  auditLog?: string;
  /** Arguments for `server/main.ts` (ports, `--root`, `--policy`, …). */
  serverArgs: string[];
  /** The agents group's data directory (writable) and upstream (reachable). */
  agents?: AgentsConfig;
}

/**
 * The package directory of this module, when it is on disk.
 *
 * @example
 * ```ts
 * import { localPackageDir } from "./launch.ts";
 * localPackageDir(); // "/path/to/sandbar" (or undefined when loaded over the network)
 * ```
 */
export function localPackageDir(): string | undefined {
  const url = new URL("../", import.meta.url);
  return url.protocol === "file:" ? fileURLToPath(url).replace(/\/$/, "") : undefined;
}

/**
 * The argv of a narrowed server.
 *
 * @example
 * ```ts ignore
 * const argv = narrowedServerArgv({ policy, root, host: "127.0.0.1", stateDir, serverArgs: [] });
 * new Deno.Command(argv[0], { args: argv.slice(1) }).spawn();
 * ```
 */
export function narrowedServerArgv(inputs: NarrowedServerInputs): string[] {
  const pkg = inputs.packageDir ?? localPackageDir();
  const main = pkg ? join(pkg, "server/main.ts") : new URL("./main.ts", import.meta.url).href;
  const flags = permissionFlags({
    policy: inputs.policy,
    root: inputs.root,
    host: inputs.host,
    stateDir: inputs.stateDir,
    commandsFile: inputs.commandsFile,
    auditLog: inputs.auditLog,
    policyFile: inputs.policyFile,
    dataDir: inputs.agents?.dataDir,
    upstreamHost: inputs.agents ? upstreamHost(inputs.agents) : undefined,
  });
  return [
    inputs.deno ?? Deno.execPath(),
    "run",
    "--no-prompt",
    "--unstable-no-legacy-abort",
    // A young generation of at most 4 MiB. Downloads allocate a fresh half-MiB buffer per chunk;
    // with V8's larger default, dead ones piled up as external memory between scavenges until
    // full mark-compacts ran every few dozen megabytes, halving download throughput (1.4-2.2
    // against 3-4 GB/s here; 1, 8 and 16 MiB all brought the full collections back). See
    // `scripts/bench/files.ts`; the pipeline bench is unchanged by it.
    "--v8-flags=--max-semi-space-size=4",
    // The import map lives in the package's deno.json; the server may run from any directory.
    ...(pkg ? ["--config", join(pkg, "deno.json")] : []),
    ...flags,
    main,
    "--no-narrow",
    ...inputs.serverArgs,
  ];
}
