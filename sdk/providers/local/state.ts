/**
 * Where local sandboxes live on disk, and their state files.
 *
 * `$SANDBAR_HOME` (else `$XDG_STATE_HOME/sandbar`, else `~/.local/state/sandbar`) holds one
 * directory per sandbox, mode 0700:
 *
 * ```
 * sandboxes/<id>/state.json   the state (mode 0600: it holds the tokens)
 * sandboxes/<id>/control.sock the supervisor's control socket
 * sandboxes/<id>/disk.img     its disk: a sparse ext4 image (where `disk` can be capped)
 * sandboxes/<id>/disk/        the image's mount point (else a plain directory), holding
 *                 disk/home/  the sandbox's home directory (/home/user inside)
 *                 disk/tmp/   its /tmp
 *                 disk/run/   policy, server state (/run/sandbar inside)
 * sandboxes/<id>/channel/     the supervisor's socket for the relay (read-only inside)
 * sandboxes/<id>/sandbox.log  what the sandbox's server printed (bounded)
 * disk-templates/ext4-<n>m.img an empty disk image of n MiB, which each sandbox's is copied from
 * ```
 *
 * The SDK writes the first state (status `creating`); from then on only the sandbox's
 * supervisor writes it. Every write is atomic (a temp file in the same directory, renamed).
 *
 * @module
 */

import type { NetworkConfig } from "../../../server/egress/rules.ts";
import { join } from "node:path";
import type { SandboxStatus } from "../../models/sandbox.ts";
import { CHANNEL_SOCKET } from "./channel.ts";
import type { CgroupRef } from "./cgroup.ts";
import type { ProcessRef } from "./procfs.ts";

/** How a sandbox is isolated: bubblewrap namespaces, or Deno permissions only. */
export type Isolation = "bwrap" | "none";

/** The state file of one local sandbox. */
export interface LocalState {
  /** Format version. */
  version: 1;
  /** Sandbox id. */
  id: string;
  /** Template name. */
  template: string;
  /** Status. */
  status: SandboxStatus;
  /** Creation time, ISO 8601. */
  createdAt: string;
  /** End of the lifetime, ISO 8601. */
  endAt: string;
  /** User metadata. */
  metadata: Record<string, string>;
  /** Sizes in force (defaults applied; null where none is): enforced by the kernel. */
  resources: { cpu: number | null; memory: number | null; disk: number | null };
  /** The process limit in force (the cgroup's `pids.max`), or null. */
  pids?: number | null;
  /**
   * While paused, the lifetime left (ms): a pause stops the clock, and `resume` sets `endAt` to
   * now plus this.
   */
  pausedRemainingMs?: number;
  /**
   * Set when its supervisor ended while it was paused: its processes are gone, its files kept;
   * `resume` or `connect` starts a fresh server on them.
   */
  dormant?: boolean;
  /** A dormant sandbox's gateway ports, taken again on waking where they are free. */
  previousPorts?: { http: number; pty: number };
  /** When it was last woken from dormancy (its new supervisor's start), ISO 8601. */
  wokenAt?: string;
  /** Its cgroup, when the host gives sandboxes one. */
  cgroup?: CgroupRef;
  /** What happened to it that a caller may want to know (OOM kills), oldest first, bounded. */
  events?: SandboxEventRecord[];
  /** Whether port access needs the access token. */
  secure: boolean;
  /** The in-sandbox server's token. */
  serverToken: string;
  /** The gateway's access token (`X-Access-Token`). */
  accessToken: string;
  /**
   * The gateway's own token (`X-Sandbar-Gateway`), which the SDK's server clients send instead
   * of the access token. Absent in states written before it existed.
   */
  gatewayToken?: string;
  /** How it is isolated. */
  isolation: Isolation;
  /**
   * Its network rules (see `server/egress/rules.ts`), when it was created with `network`: its
   * supervisor then runs its egress proxy. Absent: no network at all.
   */
  network?: NetworkConfig;
  /** The home directory as the sandbox sees it. */
  home: string;
  /** Seconds the supervisor waits for the server to listen. */
  startTimeout: number;
  /** The command line that starts the sandbox, and its environment. */
  launch: { argv: string[]; env: Record<string, string> };
  /** Capability names, once known. */
  capabilities?: string[];
  /** The supervisor process. */
  supervisor?: ProcessRef;
  /**
   * Set when the supervisor is the home's host (`host.ts`), which supervises its other sandboxes
   * too: nothing done for this sandbox alone signals it.
   */
  hosted?: true;
  /** The sandbox's top process (bubblewrap, or the server launcher without it). */
  sandbox?: ProcessRef;
  /** The gateway's loopback ports: HTTP (default 9000) and PTY (default 9001). */
  ports?: { http: number; pty: number };
  /** Without bubblewrap: the server's real ports on the host's loopback. */
  upstream?: { http: number; pty: number };
  /**
   * Set while the sandbox waits in the warm pool (`pool.ts`) under this key: hidden from `list`
   * and `connect` until a `claim` hands it out; removed by the claim.
   */
  pool?: { key: string };
}

/** One recorded event of a sandbox. */
export interface SandboxEventRecord {
  /** `oom_kill`: the kernel killed a process of the sandbox for want of memory. */
  type: "oom_kill";
  /** When the supervisor saw it, ISO 8601. */
  at: string;
  /** What happened, in words. */
  message: string;
  /** The sandbox's OOM kills so far, this one included. */
  count: number;
}

/**
 * The directory local sandboxes live in.
 *
 * @example
 * ```ts ignore
 * sandbarHome(); // "/home/me/.local/state/sandbar" unless SANDBAR_HOME says otherwise
 * ```
 */
export function sandbarHome(): string {
  const explicit = Deno.env.get("SANDBAR_HOME");
  if (explicit) return explicit;
  const xdg = Deno.env.get("XDG_STATE_HOME");
  if (xdg) return join(xdg, "sandbar");
  const home = Deno.env.get("HOME");
  if (!home) throw new Error("Neither SANDBAR_HOME nor HOME is set");
  return join(home, ".local", "state", "sandbar");
}

/** The files of one sandbox. */
export class SandboxDir {
  /** The sandbox's directory. */
  readonly path: string;

  /** The directory of sandbox `id` under `home`. */
  constructor(home: string, id: string) {
    this.path = join(home, "sandboxes", id);
  }

  /** `state.json`. */
  get stateFile(): string {
    return join(this.path, "state.json");
  }
  /** The supervisor's control socket. */
  get controlSocket(): string {
    return join(this.path, "control.sock");
  }
  /** Where its disk is mounted (a plain directory without a disk cap). */
  get disk(): string {
    return join(this.path, "disk");
  }
  /** Its disk image. */
  get image(): string {
    return join(this.path, "disk.img");
  }
  /** The sandbox's home directory on the host. */
  get root(): string {
    return join(this.disk, "home");
  }
  /** Its `/tmp` (also bounded by the disk). */
  get tmp(): string {
    return join(this.disk, "tmp");
  }
  /** Bound at `/run/sandbar` inside. */
  get run(): string {
    return join(this.disk, "run");
  }
  /** Bound read-only at `/run/sandbar-channel` inside. */
  get channel(): string {
    return join(this.path, "channel");
  }
  /** The supervisor's socket the relay connects to. */
  get channelSocket(): string {
    return join(this.channel, CHANNEL_SOCKET);
  }
  /** What the sandbox printed. */
  get log(): string {
    return join(this.path, "sandbox.log");
  }
}

/** Write `text` to `path` atomically with `mode`. */
export async function writeAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const tmp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  try {
    await Deno.writeTextFile(tmp, text, { mode, createNew: true });
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}

/** Write a state file. */
export function writeState(dir: SandboxDir, state: LocalState): Promise<void> {
  return writeAtomic(dir.stateFile, JSON.stringify(state, null, 2));
}

/** Read a state file; null when it is missing or unreadable. */
export async function readState(dir: SandboxDir): Promise<LocalState | null> {
  try {
    const state = JSON.parse(await Deno.readTextFile(dir.stateFile)) as LocalState;
    return state.version === 1 ? state : null;
  } catch {
    return null;
  }
}

/** Ids of every sandbox directory under `home`. */
export async function sandboxIds(home: string): Promise<string[]> {
  const ids: string[] = [];
  try {
    for await (const e of Deno.readDir(join(home, "sandboxes"))) {
      if (e.isDirectory && /^[a-z0-9]+$/.test(e.name)) ids.push(e.name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return ids;
}

/**
 * Remove a sandbox directory for good, even when code inside made parts of it unreadable
 * (`chmod 000`): permissions are restored as needed and the removal retried.
 */
export async function removeTree(path: string): Promise<void> {
  try {
    await Deno.remove(path, { recursive: true });
    return;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
  }
  await restoreAccess(path);
  await Deno.remove(path, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

async function restoreAccess(path: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch {
    return;
  }
  if (!info.isDirectory) return;
  await Deno.chmod(path, 0o700).catch(() => {});
  try {
    for await (const e of Deno.readDir(path)) await restoreAccess(join(path, e.name));
  } catch { /* unreadable still: the removal will say so */ }
}
