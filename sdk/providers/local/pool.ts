/**
 * The warm pool of local sandboxes: sandboxes started ahead of need, one set per option set,
 * so that `Sandbox.create()` hands one out in tens of milliseconds instead of starting one.
 *
 * There is no pool daemon. A pooled sandbox is an ordinary local sandbox (supervised like any
 * other, by the home's host: `host.ts`) whose server waits for a claim (`server/claim.ts`); the pool
 * itself is a directory:
 *
 * ```
 * pool/<options>-<package>/<id>        one empty file per ready sandbox
 * pool/<options>-<package>/spec.json   what its sandboxes are made of (no secret)
 * pool/<options>-<package>/fill.lock   held by the process that is filling it
 * ```
 *
 * - **Key.** `<options>` hashes everything of the create request but what a claim applies
 *   (`envs`, `metadata`, `timeout`, `requestTimeout`), with the isolation: the policy, sizes,
 *   `secure`, the template. `<package>` hashes the package (its version, where it is loaded
 *   from and, for a checkout, the size and time of every module file) and Deno's version. A
 *   changed package or option set is another directory, so a stale sandbox is never handed out;
 *   a filler removes the pools of its options made by another package.
 * - **Claim.** Unlinking the entry file is the claim (one unlink succeeds, whoever races), then
 *   the sandbox's supervisor takes the caller's tokens, minted by the caller at that moment,
 *   `envs`, lifetime and metadata (`claim` on its control socket). Each pooled sandbox is handed
 *   out once and is then the caller's like any other.
 * - **Refill.** A create that finds the pool short starts a filler, a detached process
 *   (`pool_fill.ts`) that waits a second (the claimant's first commands go first), starts
 *   sandboxes until the pool is full and exits; short-lived programs
 *   are served too, since nothing of the pool lives in them.
 * - **Idle.** A pooled sandbox lives `SANDBAR_POOL_IDLE` seconds (default 300) unclaimed, then
 *   its supervisor ends it as any sandbox at its end: an unused pool costs nothing after that.
 *
 * Size: `new LocalProvider({ pool: n })`, else `SANDBAR_POOL` (0 to 64; 0, the default, is off).
 *
 * @module
 */

import { join } from "node:path";
import { ValidationError } from "../../errors/mod.ts";
import type { ProviderCreateRequest } from "../types.ts";
import { onPath } from "./on_path.ts";
import { packageSource } from "./package_source.ts";
import { isAlive, processRef } from "./procfs.ts";
import { removeTree, writeAtomic } from "./state.ts";
import type { Isolation } from "./state.ts";

/** The most sandboxes one pool keeps. */
export const MAX_POOL = 64;
/** Seconds a pooled sandbox waits unclaimed, by default. */
export const DEFAULT_POOL_IDLE = 300;

/** How big the pool is and how long its sandboxes wait. */
export interface PoolSettings {
  /** Sandboxes kept ready per option set; 0 is off. */
  size: number;
  /** Seconds a pooled sandbox waits unclaimed before it ends. */
  idle: number;
}

function integerIn(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min || n > max) {
    throw new ValidationError(`${name} must be an integer from ${min} to ${max}, got ${text}`);
  }
  return n;
}

/**
 * The pool's settings: `size` if given, else `SANDBAR_POOL`, else 0 (off); the idle time from
 * `SANDBAR_POOL_IDLE`, else {@linkcode DEFAULT_POOL_IDLE}.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { poolSettings } from "./pool.ts";
 * assert.equal(poolSettings(2).size, 2);
 * assert.throws(() => poolSettings(-1), /pool must be an integer from 0 to 64/);
 * ```
 */
export function poolSettings(size?: number): PoolSettings {
  const env = Deno.env.get("SANDBAR_POOL");
  const chosen = size !== undefined
    ? integerIn("pool", String(size), 0, MAX_POOL)
    : env
    ? integerIn("SANDBAR_POOL", env, 0, MAX_POOL)
    : 0;
  const idleEnv = Deno.env.get("SANDBAR_POOL_IDLE");
  const idle = idleEnv ? integerIn("SANDBAR_POOL_IDLE", idleEnv, 1, 86_400) : DEFAULT_POOL_IDLE;
  return { size: chosen, idle };
}

/** A pooled sandbox's request: the caller's, with what a claim applies left out. */
export interface PoolSpec {
  /** The request a pooled sandbox is created with. */
  request: ProviderCreateRequest;
  /** Its isolation. */
  isolation: Isolation;
  /** Whether it gets a cgroup and a disk image (`LocalProviderOptions.limits`). */
  limits: boolean;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest).slice(0, 12), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** JSON with sorted keys, so equal option sets hash equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

let packageHash: Promise<string> | undefined;

/**
 * What tells one package from another: version, origin, and for a checkout its files (also the
 * key of the host's module cache warm-up, `module_cache.ts`).
 */
export function packageFingerprint(): Promise<string> {
  return packageHash ??= (async () => {
    const source = packageSource();
    const parts = [Deno.version.deno, source.module("server/main.ts")];
    if (source.dir !== null) {
      const walk = (dir: string) => {
        let entries: Deno.DirEntry[];
        try {
          entries = [...Deno.readDirSync(dir)].sort((a, b) => a.name < b.name ? -1 : 1);
        } catch {
          return;
        }
        for (const e of entries) {
          const path = join(dir, e.name);
          if (e.isDirectory) walk(path);
          else if (e.isFile && /\.(ts|json)$/.test(e.name)) {
            const info = Deno.statSync(path);
            parts.push(`${path} ${info.size} ${info.mtime?.getTime()}`);
          }
        }
      };
      for (const top of ["server", "sdk", "shared", "engine"]) walk(join(source.dir, top));
      for (const file of ["deno.json", "deno.lock"]) {
        const info = await Deno.stat(join(source.dir, file)).catch(() => null);
        if (info) parts.push(`${file} ${info.size} ${info.mtime?.getTime()}`);
      }
    }
    return await sha256(parts.join("\n"));
  })();
}

/**
 * The pool key of a request (`<options>-<package>`), or null when it cannot be pooled (a
 * `commandsFile`, whose contents the key could not follow).
 */
export async function poolKey(
  request: ProviderCreateRequest,
  isolation: Isolation,
  limits = true,
): Promise<string | null> {
  if (request.commandsFile !== undefined) return null;
  const { envs: _e, metadata: _m, timeout: _t, requestTimeout: _r, ...shape } = request;
  const options = await sha256(canonical({ ...shape, isolation, limits }));
  return `${options}-${await packageFingerprint()}`;
}

/** The spec of a pooled sandbox for `request`. */
export function poolSpec(
  request: ProviderCreateRequest,
  isolation: Isolation,
  limits = true,
): PoolSpec {
  return {
    request: { ...request, envs: {}, metadata: {}, requestTimeout: request.requestTimeout },
    isolation,
    limits,
  };
}

/** One pool's directory. */
export class PoolDir {
  /** Its path. */
  readonly path: string;
  /** Its key. */
  readonly key: string;

  /** The pool of `key` under `home`. */
  constructor(home: string, key: string) {
    this.key = key;
    this.path = join(home, "pool", key);
  }

  /** Ids of the sandboxes waiting in it. */
  async ids(): Promise<string[]> {
    const ids: string[] = [];
    try {
      for await (const e of Deno.readDir(this.path)) {
        if (e.isFile && /^[a-z0-9]{20}$/.test(e.name)) ids.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return ids;
  }

  /** Take one waiting sandbox out of the pool: its id, or null when none is left. */
  async take(): Promise<string | null> {
    for (const id of await this.ids()) {
      try {
        await Deno.remove(join(this.path, id));
        return id;
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e; // another process took it
      }
    }
    return null;
  }

  /** Put a ready sandbox in the pool. */
  async add(id: string): Promise<void> {
    await Deno.writeTextFile(join(this.path, id), "", { mode: 0o600 });
  }

  /** Record what the pool's sandboxes are made of (for its filler). */
  async writeSpec(spec: PoolSpec): Promise<void> {
    await Deno.mkdir(this.path, { recursive: true, mode: 0o700 });
    await writeAtomic(join(this.path, "spec.json"), JSON.stringify(spec), 0o600);
  }

  /** What the pool's sandboxes are made of. */
  async readSpec(): Promise<PoolSpec> {
    return JSON.parse(await Deno.readTextFile(join(this.path, "spec.json")));
  }

  /**
   * Become the pool's only filler: true when this process now holds `fill.lock` (a lock whose
   * holder is gone is taken over).
   */
  async lock(pid = Deno.pid): Promise<boolean> {
    const path = join(this.path, "fill.lock");
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const ref = processRef(pid);
        await Deno.writeTextFile(path, JSON.stringify(ref ?? { pid }), { createNew: true });
        return true;
      } catch (e) {
        if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      }
      const holder = await Deno.readTextFile(path).then(JSON.parse).catch(() => null);
      if (holder && isAlive(holder)) return false;
      await Deno.remove(path).catch(() => {});
    }
    return false;
  }

  /** Whether a filler holds the pool now. */
  async filling(): Promise<boolean> {
    const holder = await Deno.readTextFile(join(this.path, "fill.lock")).then(JSON.parse).catch(
      () => null,
    );
    return holder !== null && isAlive(holder);
  }

  /** Let the pool go (the filler is done). */
  async unlock(): Promise<void> {
    await Deno.remove(join(this.path, "fill.lock")).catch(() => {});
  }

  /** Every pool under `home`. */
  static async all(home: string): Promise<PoolDir[]> {
    const pools: PoolDir[] = [];
    try {
      for await (const e of Deno.readDir(join(home, "pool"))) {
        if (e.isDirectory) pools.push(new PoolDir(home, e.name));
      }
    } catch { /* no pool yet */ }
    return pools;
  }

  /** Ask the pool's filler, if one runs, to stop, and wait (up to a minute) until it has. */
  async stopFiller(): Promise<void> {
    const path = join(this.path, "fill.lock");
    const holder = await Deno.readTextFile(path).then(JSON.parse).catch(() => null);
    if (!holder || !isAlive(holder)) return;
    try {
      Deno.kill(holder.pid, "SIGTERM");
    } catch { /* gone */ }
    const until = Date.now() + 60_000;
    while (isAlive(holder) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  }

  /** Pools of the same options made by another package: stale. */
  async stalePeers(): Promise<PoolDir[]> {
    const home = join(this.path, "..", "..");
    const [options] = this.key.split("-");
    const peers: PoolDir[] = [];
    try {
      for await (const e of Deno.readDir(join(home, "pool"))) {
        if (e.isDirectory && e.name.startsWith(`${options}-`) && e.name !== this.key) {
          peers.push(new PoolDir(home, e.name));
        }
      }
    } catch { /* no pool yet */ }
    return peers;
  }

  /** Remove the pool's directory (its sandboxes must be gone or taken). */
  async remove(): Promise<void> {
    await removeTree(this.path).catch(() => {});
  }
}

/**
 * How long a filler waits, holding the pool's lock, before it starts sandboxes: the program that
 * just claimed one is about to use it, and a refill (a sandbox's three Deno starts) would compete
 * with its first commands.
 */
export const FILL_DELAY_MS = 1000;

// The filler reads /proc (liveness of supervisors) and starts sandboxes: as the supervisor, -A.
const FILLER_FLAGS = ["run", "-A", "--no-config", "--no-lock", "--no-prompt"];

/**
 * Start the pool's filler, detached (its own session, as a supervisor is): it outlives the
 * program that asked, fills the pool of `key` to `size` and exits. What it prints goes to
 * `pool/<key>/fill.log`.
 */
export function spawnFiller(home: string, key: string, size: number): void {
  const source = packageSource();
  const extra = source.runFlags.filter((f) =>
    !FILLER_FLAGS.includes(f) && !f.startsWith("--allow-")
  );
  const log = join(home, "pool", key, "fill.log");
  const deno = [
    Deno.execPath(),
    ...FILLER_FLAGS,
    ...extra,
    source.module("sdk/providers/local/pool_fill.ts"),
    home,
    key,
    String(size),
  ];
  const sh = ["/bin/sh", "-c", 'exec "$@" >>"$0" 2>&1', log, ...deno];
  const setsid = onPath("setsid");
  const argv = setsid ? [setsid, "--fork", ...sh] : sh;
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: "/",
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: !setsid,
  }).spawn();
  // `setsid --fork` returns at once; reap it without holding this program open.
  child.status.catch(() => {});
  child.unref();
}
