/**
 * Deno's caches, prepared on the host for the modules a sandbox of this package runs, before its
 * first sandbox: once per package (the pool's fingerprint: Deno's version and the size and time
 * of every module file) and `SANDBAR_HOME`.
 *
 * Inside a sandbox `DENO_DIR` is read-only, so whatever Deno did not find there it does again in
 * the server's process at every start, and never keeps:
 *
 * - **dependency analysis and emitted JavaScript** (`dep_analysis_cache_v2`, `gen/`): without
 *   them the server parses and transpiles every module it loads; measured, an idle sandbox's
 *   server then held about 66 MiB of anonymous memory instead of 46. From a checkout, `deno
 *   cache` with the server's configuration fills them.
 * - **V8's code cache** (`v8_code_cache_v2`): without it every module is compiled from source.
 *   Deno writes it only for modules it has run, so a server that only ever ran inside sandboxes
 *   never has one: here a program loads the modules of the server's start path on the host, with
 *   the server's own runtime flags (`SERVER_RUNTIME_FLAGS`: V8 refuses a cache made under other
 *   flags), and exits.
 *
 * Those caches are SQLite databases in WAL mode that other Deno processes keep writing. Bound
 * read-only, SQLite can read one only while its `-wal` and `-shm` files exist, which is while some
 * process on the host has it open: measured, with none, a sandbox's server loaded its start path
 * with 0.13 s of CPU instead of 0.06, as if there were no cache at all. So the rows for this
 * package's modules and its npm packages are copied into a snapshot of each database under
 * `SANDBAR_HOME/module-cache/<fingerprint>/`, with an empty `-wal` and SQLite's index of it
 * (`-shm`, `cache_snapshot.ts`) beside it that nothing ever writes. A sandbox gets a `DENO_DIR` of its own, at the host's path so that every
 * module keeps its name (a code cache entry is found by the module's URL), holding these snapshots
 * and the package's parts of the host's `npm/`, `remote/` and `gen/` (`packageCacheDirs`), all
 * read-only: a local sandbox's is a tmpfs made read-only once filled (`launch.ts`); a container's
 * is a directory of its own with hard links to the snapshots ({@linkcode linkModuleCache}), whose
 * empty directories at those paths the engine binds the host's over (`docker/launch.ts`).
 *
 * A sandbox never gets the host's `DENO_DIR` itself. (Its live databases were ~10 ms faster to
 * read, to a local sandbox's first command's result, while the snapshots' `-shm` was an empty file:
 * SQLite then kept no page cache between lookups; with its own index there it does,
 * `cache_snapshot.ts`.) That directory holds every
 * program the host's user ran with Deno: their emitted JavaScript under `gen/file/`, their
 * downloads under `remote/`, their compiled code, string constants and all, in the code cache.
 * None of it is the sandbox's to read. `packageCacheDirs` names what it gets.
 *
 * A stale entry is never used: each row carries the hash of the source it was made from, which
 * Deno compares before using it (and V8 checks its own version and flags), and a changed package
 * gets a snapshot of its own. A failure costs start time and memory only, so it is not an error:
 * the sandbox then gets no databases, and its server compiles what it loads.
 *
 * @module
 */

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { realPathOr } from "../../../shared/real_path.ts";
import { SERVER_RUNTIME_FLAGS } from "../../../server/launch.ts";
import { type PackageSource, SANDBOX_MODULES } from "./package_source.ts";
import { packageFingerprint } from "./pool.ts";

/** The modules a sandbox's server loads before its first command answers, or soon after. */
export const START_MODULES: readonly string[] = [
  "sdk/providers/local/relay.ts",
  // What the relay loads in a sandbox with a network section (its egress bridge).
  "server/egress/bridge.ts",
  "server/main.ts",
  // What `server/main.ts` imports when it serves, and what a pooled or JSONC-configured one adds.
  "server/serve.ts",
  "server/confine/confinement.ts",
  "server/files/withheld.ts",
  "server/claim.ts",
  "server/policy/load.ts",
  // The default identity's spawner thread, started as the server listens.
  "server/confine/spawner_worker.ts",
  // Groups loaded on their first request, whose first request should not compile them.
  "server/handlers/file_ops/index.ts",
  "server/handlers/terminal/index.ts",
  "server/handlers/system/index.ts",
  "server/handlers/dev_tools/index.ts",
  "server/handlers/named_commands/index.ts",
];

/** The databases a sandbox reads, each with its `-wal` and `-shm` files. */
export const CACHE_DATABASES: readonly string[] = [
  "v8_code_cache_v2",
  "dep_analysis_cache_v2",
  "node_analysis_cache_v2",
];

/**
 * The parts of the host's `DENO_DIR` a sandbox of `source` reads, relative to it: the npm
 * packages, and the package's own modules, downloaded (by URL: `remote/` and `gen/` of its host)
 * or emitted (a checkout: the directories of `gen/file/<package>`, by the path as given and as
 * resolved). Nothing else: the rest of `gen/` and `remote/` holds the host's other programs, and
 * the live databases their code cache; a sandbox reads this package's rows of those, copied
 * (the snapshots).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { packageCacheDirs } from "./module_cache.ts";
 * const source = { dir: null, module: (p: string) => `https://jsr.io/@sandbar/sandbar/1.0.0/${p}`, runFlags: [] };
 * assert.deepEqual(packageCacheDirs(source, "/nowhere"), ["npm", "remote/https/jsr.io", "gen/https/jsr.io"]);
 * ```
 */
export function packageCacheDirs(source: PackageSource, denoDir: string): string[] {
  const dirs = ["npm"];
  if (source.dir === null) {
    const url = new URL(source.module(""));
    // Deno's name for a host with a port: `127.0.0.1_PORT4545`.
    const host = url.port ? `${url.hostname}_PORT${url.port}` : url.hostname;
    const scheme = url.protocol.slice(0, -1);
    return [...dirs, `remote/${scheme}/${host}`, `gen/${scheme}/${host}`];
  }
  for (const path of new Set([source.dir, realPathOr(source.dir)])) {
    const emits = join("gen/file", path);
    try {
      // Its directories, not the files beside them: `$deno$eval.mts.js` is a host program's.
      for (const e of Deno.readDirSync(join(denoDir, emits))) {
        if (e.isDirectory) dirs.push(join(emits, e.name));
      }
    } catch {
      // Nothing emitted yet: the server transpiles what it loads.
    }
  }
  return dirs;
}

/** Where a snapshot is made before it is renamed into place. */
const TEMP_PREFIX = ".new-";
/** After this long a snapshot in the making was abandoned (its process died). */
const ABANDONED_MS = 10 * 60_000;
/**
 * Another package's snapshots unused for this long are removed (each create of a package marks
 * its own as used, at most once a minute per process): two packages that share a home (two
 * checkouts, an upgrade with programs of the old version still running) each keep theirs, and
 * neither makes its own again after each create of the other.
 */
const UNUSED_MS = 60 * 60_000;
/** How often a process marks the snapshots it uses as used (their directory's time). */
const MARK_MS = 60_000;

/** By `SANDBAR_HOME` and `DENO_DIR`: the preparation of this process. */
const prepared = new Map<string, Promise<string | null>>();
/** By snapshot directory: when this process last marked it as used. */
const marked = new Map<string, number>();

/**
 * Prepare Deno's caches (`denoDir`) for the sandbox's modules of `source`, unless `home` already
 * holds them for this package. Once per process and `home`, and again when they are gone (another
 * process removed them, unused for long). Resolves to the directory of the snapshots
 * (`CACHE_DATABASES`) a sandbox's `DENO_DIR` is made from, or null when they could not be made.
 */
export async function warmModuleCache(
  source: PackageSource,
  denoDir: string,
  home: string,
): Promise<string | null> {
  const key = `${home}\0${denoDir}`;
  let done = prepared.get(key);
  if (!done) prepared.set(key, done = prepare(source, denoDir, home));
  let dir = await done;
  if (dir !== null && !complete(dir)) {
    if (prepared.get(key) === done) prepared.set(key, prepare(source, denoDir, home));
    dir = await prepared.get(key)!;
  }
  if (dir !== null && Date.now() - (marked.get(dir) ?? 0) > MARK_MS) {
    marked.set(dir, Date.now());
    const now = new Date();
    await Deno.utime(dir, now, now).catch(() => {});
  }
  return dir;
}

async function prepare(
  source: PackageSource,
  denoDir: string,
  home: string,
): Promise<string | null> {
  const caches = join(home, "module-cache");
  const dir = join(caches, await packageFingerprint());
  if (complete(dir)) return dir;
  if (source.dir !== null && !await run(source, denoDir, cacheArgs(source, source.dir))) {
    return null;
  }
  // Deno writes a module's code cache when it runs it: load the start path once, here.
  if (!await run(source, denoDir, loadArgs(source))) return null;
  await Deno.mkdir(caches, { recursive: true, mode: 0o700 });
  const temp = await Deno.makeTempDir({ dir: caches, prefix: TEMP_PREFIX });
  try {
    const prefixes = modulePrefixes(source, denoDir);
    const { snapshotDatabase } = await import("./cache_snapshot.ts");
    for (const name of CACHE_DATABASES) {
      const from = join(denoDir, name);
      if (!await Deno.stat(from).then(() => true, () => false)) continue;
      await snapshotDatabase(from, join(temp, name), prefixes);
    }
    // Where a container's engine binds the host's directories over (`containerBody`): it cannot
    // make them in a read-only mount.
    for (const d of packageCacheDirs(source, denoDir)) {
      await Deno.mkdir(join(temp, d), { recursive: true });
    }
    // Another process may have made it meanwhile: theirs is as good. What is there otherwise
    // is half made, or an earlier version's stamp file.
    if (!complete(dir)) await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.rename(temp, dir).catch(() => {});
  } catch {
    return null;
  } finally {
    await Deno.remove(temp, { recursive: true }).catch(() => {});
  }
  // Other packages' caches are kept while used (`UNUSED_MS`): a live sandbox never needs them
  // (a local one's binds hold its files, a container's are links of its own,
  // `linkModuleCache`), but a program of that package makes its next sandboxes from them.
  // Another process's snapshot in the making is left alone, unless it was abandoned long ago.
  for await (const e of Deno.readDir(caches)) {
    const path = join(caches, e.name);
    if (path === dir) continue;
    const age = Date.now() - ((await Deno.stat(path).catch(() => null))?.mtime?.getTime() ?? 0);
    if (age < (e.name.startsWith(TEMP_PREFIX) ? ABANDONED_MS : UNUSED_MS)) continue;
    await Deno.remove(path, { recursive: true }).catch(() => {});
  }
  return complete(dir) ? dir : null;
}

/** The files of the snapshots, relative to their directory: each database and its two files. */
const SNAPSHOT_FILES = CACHE_DATABASES.flatMap((name) => ["", "-wal", "-shm"].map((s) => name + s));

/** Whether `dir` holds every snapshot with its two files (renamed into place once whole). */
function complete(dir: string): boolean {
  return SNAPSHOT_FILES.every((name) => {
    try {
      return Deno.statSync(join(dir, name)).isFile;
    } catch {
      return false;
    }
  });
}

/**
 * A sandbox's own `DENO_DIR` at `to`, made of hard links to the snapshots in `prepared` and the
 * empty directories of `dirs` (where an engine binds the host's directories over): what a
 * container binds for as long as it lives, whatever becomes of `prepared` meanwhile (removed
 * with its package, unused; a bound directory emptied under a running container would leave
 * its lazily loaded modules nowhere). Resolves to `to`, or to `prepared` itself where links
 * cannot be made (another file system).
 */
export async function linkModuleCache(
  prepared: string,
  to: string,
  dirs: readonly string[],
): Promise<string> {
  try {
    await Deno.mkdir(to, { mode: 0o755 });
    for (const name of SNAPSHOT_FILES) await Deno.link(join(prepared, name), join(to, name));
    for (const d of dirs) await Deno.mkdir(join(to, d), { recursive: true });
    return to;
  } catch {
    await Deno.remove(to, { recursive: true }).catch(() => {});
    return prepared;
  }
}

/** `deno cache` of everything a sandbox runs, with the server's configuration (a checkout). */
function cacheArgs(source: PackageSource, dir: string): string[] {
  return [
    "cache",
    "--config",
    join(dir, "deno.json"),
    "--quiet",
    ...SANDBOX_MODULES.map((m) => source.module(m)),
    // Imported at run time by `server/main.ts`; named so its graph is analysed for certain.
    source.module("server/serve.ts"),
  ];
}

/**
 * The loader: imports the modules named on its command line (by URL) and exits. The modules are
 * imported, not run: the server's entry point serves only as the main module, and the relay does
 * nothing without its variables. A `data:` URL rather than a module of the package, whose
 * import of a name known only at run time `deno publish` would warn about.
 */
const LOADER = `data:application/javascript,${
  encodeURIComponent("for (const m of Deno.args) await import(m); Deno.exit(0);")
}`;

/** `deno run` of the loader over the start path, with the server's flags and configuration. */
function loadArgs(source: PackageSource): string[] {
  return [
    "run",
    "-A",
    "--no-prompt",
    ...SERVER_RUNTIME_FLAGS,
    // `-A` covers `--allow-import`, and Deno refuses the two together.
    ...(source.dir !== null
      ? ["--config", join(source.dir, "deno.json")]
      : source.runFlags.filter((f) => !f.startsWith("--allow-"))),
    LOADER,
    ...START_MODULES.map((m) => {
      const module = source.module(m);
      return source.dir !== null ? pathToFileURL(module).href : module;
    }),
  ];
}

/** Run Deno with `args` on the host's cache; whether it succeeded. */
async function run(source: PackageSource, denoDir: string, args: string[]): Promise<boolean> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: source.dir ?? "/",
    clearEnv: true,
    env: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1", PATH: Deno.env.get("PATH") ?? "" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output().catch(() => null);
  return out?.success ?? false;
}

/**
 * Where the rows to copy come from: the package's modules, Deno's own, and everything under
 * `DENO_DIR` (its npm packages), by the names Deno gives them (the cache's path as given and as
 * resolved).
 */
function modulePrefixes(source: PackageSource, denoDir: string): string[] {
  const prefixes = [
    source.dir !== null ? `${pathToFileURL(source.dir).href}/` : source.module(""),
    // Deno's own modules loaded on demand (its Node compatibility layer: `node:url`, …; some,
    // such as `node:timers`, are cached under their `node:` name).
    "ext:",
    "node:",
  ];
  for (const path of new Set([denoDir, realPathOr(denoDir)])) {
    prefixes.push(`${pathToFileURL(path).href}/`);
  }
  return prefixes;
}
