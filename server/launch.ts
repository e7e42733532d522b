/**
 * The command line of a narrowed server: `deno run` with the permission flags the policy implies
 * (see `server/confine/deno_permissions.ts`), the package's import map, and `server/main.ts --no-narrow`, so the
 * process that starts serves at once under those permissions. The launcher in `server/main.ts`
 * and the SDK's local provider both start the server this way.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type AgentsConfig, upstreamHost } from "./agents/config.ts";
import { permissionFlags, type ServerRuntime } from "./confine/deno_permissions.ts";
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
  /**
   * Run a server loaded by URL from Deno's cache alone (`--cached-only`): for a sandbox, which
   * has no network. Ignored for a package on disk.
   */
  cachedOnly?: boolean;
  /** The agents group's data directory (writable) and upstream (reachable). */
  agents?: AgentsConfig;
  /**
   * More `deno run` flags, before the module: the local provider preloads its relay into the
   * sandbox's server (`--preload`) and adds the relay's few permissions. Repeated
   * `--allow-x=…` flags add up, but a list after a bare `--allow-x` would replace the whole
   * grant, so such a list is left out where the policy's flags already grant all of `x`.
   */
  denoFlags?: readonly string[];
  /** The server listens on abstract sockets (`--abstract-sockets`): see `permissionFlags`. */
  abstractSockets?: boolean;
  /**
   * The server runs in another file system and environment (a container): its `PATH` and
   * `DENO_DIR` there, whose directories its permissions name instead of this process's (see
   * `permissionFlags`); its Deno binary is {@linkcode NarrowedServerInputs.deno}.
   */
  inside?: Omit<ServerRuntime, "deno">;
}

/**
 * The `deno run` flags of the server's runtime. A V8 code cache is only taken by a runtime with
 * the same V8 flags, so whatever loads the server's modules to fill the cache a sandbox reads
 * (`sdk/providers/local/module_cache.ts`) runs with these too.
 */
export const SERVER_RUNTIME_FLAGS: readonly string[] = [
  "--unstable-no-legacy-abort",
  // Only what the start path imports is read and compiled at start; the groups loaded on first
  // use (browser, agents, code) are read when first imported, not walked before the first line
  // runs (Deno otherwise builds the whole graph, dynamic imports included: ~120 more files).
  "--unstable-lazy-dynamic-imports",
  // A young generation of at most 4 MiB. Downloads allocate a fresh half-MiB buffer per chunk;
  // with V8's larger default, dead ones piled up as external memory between scavenges until
  // full mark-compacts ran every few dozen megabytes, halving download throughput (1.4-2.2
  // against 3-4 GB/s here; 1, 8 and 16 MiB all brought the full collections back). See
  // `scripts/bench/files.ts`; the pipeline bench is unchanged by it.
  "--v8-flags=--max-semi-space-size=4",
];

/**
 * The package directory of this module, when it is on disk.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { localPackageDir } from "./launch.ts";
 * const dir = localPackageDir(); // undefined when the package is loaded over the network
 * assert.ok(dir && (await Deno.stat(`${dir}/server/main.ts`)).isFile);
 * ```
 */
export function localPackageDir(): string | undefined {
  const url = new URL("../", import.meta.url);
  return url.protocol === "file:" ? fileURLToPath(url).replace(/\/$/, "") : undefined;
}

/**
 * The argv of a narrowed server.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { narrowedServerArgv } from "./launch.ts";
 * import { compilePolicy } from "./policy/compile.ts";
 * const policy = compilePolicy({ preset: "readonly" }, { root: "/workspace", env: {},
 *   implemented: new Set(["health"]), defaultToken: "0123456789abcdef0123", configured: true });
 * const argv = narrowedServerArgv({
 *   policy, root: "/workspace", host: "127.0.0.1", stateDir: "/tmp/s", serverArgs: [],
 * });
 * assert.equal(argv[0], Deno.execPath());
 * assert.ok(argv.some((a) => a.startsWith("--allow-read=") && a.includes("/workspace")));
 * assert.ok(!argv.includes("-A") && !argv.includes("--allow-all"));
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
    abstractSockets: inputs.abstractSockets,
    inside: inputs.inside && { ...inputs.inside, deno: inputs.deno ?? Deno.execPath() },
  });
  return [
    inputs.deno ?? Deno.execPath(),
    "run",
    "--no-prompt",
    ...SERVER_RUNTIME_FLAGS,
    // The import map lives in the package's deno.json; the server may run from any directory.
    // Loaded by URL (from a registry), its specifiers are already resolved: no configuration
    // file, and none of the current directory's.
    ...(pkg ? ["--config", join(pkg, "deno.json")] : ["--no-config"]),
    ...(!pkg && inputs.cachedOnly ? ["--cached-only"] : []),
    ...(!pkg ? [`--allow-import=${new URL(main).host}`] : []),
    ...flags,
    ...(inputs.denoFlags ?? []).filter((f) => !flags.includes(f.split("=")[0])),
    main,
    "--no-narrow",
    ...inputs.serverArgs,
  ];
}
