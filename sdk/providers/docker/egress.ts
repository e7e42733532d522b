/**
 * The SDK's side of a docker sandbox's egress keeper (`egress_keeper.ts`): start it before the
 * container is made (the engine binds its CA directory, and the relay's bridge inside connects
 * to its proxy's socket), tell it once the container was started, pass `network.update` and
 * `audit` to it from any process, and stop it with the sandbox. Its directory
 * (`$SANDBAR_HOME/docker-egress/<id>`, mode 0700, never bound into the container) holds its
 * control socket, its audit lines and its process reference; the container's `sandbar.egress`
 * label names it.
 *
 * Only `control.ts` and the spawning helpers are loaded here (the keeper imports this file too):
 * the proxy's module graph is the keeper's alone.
 *
 * @module
 */

import { join } from "node:path";
import type { NetworkConfig } from "../../../server/egress/rules.ts";
import type { AuditEntry } from "../../../server/pipeline/audit.ts";
import { SandboxError } from "../../errors/mod.ts";
import {
  controlCall,
  type ControlRequest,
  type ControlResponse,
  ControlUnavailable,
} from "../local/control.ts";
import type { PackageSource } from "../local/package_source.ts";
import { isAlive, type ProcessRef, ProcUnreadable } from "../local/procfs.ts";
import { readySignal, spawnSupervisor } from "../local/spawn.ts";
import { removeTree, writeAtomic } from "../local/state.ts";

/** What the creating process hands the keeper (`config.json`). */
export interface KeeperConfig {
  /** The sandbox id (the audit lines' identity). */
  id: string;
  /** `DOCKER_HOST` of the engine. */
  engine: string;
  /** The container's name. */
  container: string;
  /** The sandbox's rules, secrets with their placeholders included. */
  network: NetworkConfig;
  /** The proxy's socket on the host (in the directory bound into the container). */
  socket: string;
  /** Where the sandbox's CA certificate goes when it has secrets. */
  caDir: string;
  /** How long to wait for the `watch` request before giving up (the creator died), ms. */
  startTimeoutMs: number;
}

/** The control socket's name in the keeper's directory. */
export const KEEPER_SOCKET = "control.sock";
/** The file naming the keeper's process (`{pid, start}`), in its directory. */
export const KEEPER_PROCESS = "keeper.json";
/** The audit lines' file, in its directory. */
export const KEEPER_AUDIT = "egress.jsonl";
/** The label naming a sandbox's keeper directory (only on sandboxes created with `network`). */
export const EGRESS_LABEL = "sandbar.egress";
/** The proxy's socket, in the sandbox's host directory (inside: `/run/sandbar-host/egress.sock`). */
export const EGRESS_SOCKET = "egress.sock";
/** The CA directory, in the sandbox's host directory (bound at `/opt/sandbar/egress-ca`). */
export const EGRESS_CA_DIR = "egress-ca";

/** The keeper's directory of sandbox `id` under a sandbar home. */
export function keeperDir(sandbarHome: string, id: string): string {
  return join(sandbarHome, "docker-egress", id);
}

/** Start the keeper in `dir` with `config` and return once its proxy listens. */
export async function startKeeper(
  dir: string,
  config: KeeperConfig,
  source: PackageSource,
): Promise<void> {
  await Deno.mkdir(join(dir, ".."), { recursive: true, mode: 0o700 });
  await Deno.mkdir(dir, { mode: 0o700 });
  // The secrets' values pass through this file (mode 0600 in a 0700 directory) for the moment
  // the keeper takes to read and remove it.
  await writeAtomic(join(dir, "config.json"), JSON.stringify(config), 0o600);
  const spawned = spawnSupervisor(
    source.module("sdk/providers/docker/egress_keeper.ts"),
    source.runFlags,
    [dir],
  );
  const signal = await readySignal(spawned, 60_000);
  if (signal.event !== "ready") {
    await removeTree(dir).catch(() => {});
    throw new SandboxError(`The docker sandbox's egress proxy did not start: ${signal.message}`);
  }
}

/** One request to the keeper in `dir`; its failure is a SandboxError naming the sandbox. */
export async function keeperCall(
  dir: string,
  id: string,
  request: ControlRequest,
  timeoutMs = 10_000,
): Promise<ControlResponse & { ok: true }> {
  let answer: ControlResponse;
  try {
    answer = await controlCall(join(dir, KEEPER_SOCKET), request, timeoutMs);
  } catch (e) {
    throw new SandboxError(
      `Sandbox ${id}'s egress proxy did not answer: ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (!answer.ok) throw new SandboxError(`Sandbox ${id}'s egress proxy: ${answer.error}`);
  return answer;
}

/** Tell the keeper that the container was started: it waits on it from now, ending with it. */
export async function watchKeeper(dir: string, id: string): Promise<void> {
  await keeperCall(dir, id, { op: "watch" });
}

/** New rules; how many open connections they closed. */
export async function updateKeeper(
  dir: string,
  id: string,
  network: NetworkConfig | false,
): Promise<number> {
  return (await keeperCall(dir, id, { op: "network_update", network })).closed ?? 0;
}

/** The last `limit` audit lines. */
export async function keeperAudit(dir: string, id: string, limit: number): Promise<AuditEntry[]> {
  return (await keeperCall(dir, id, { op: "network_audit", limit })).audit ?? [];
}

/** The keeper's process, or null when it has not said yet (or is gone). */
export async function keeperProcess(dir: string): Promise<ProcessRef | null> {
  try {
    return JSON.parse(await Deno.readTextFile(join(dir, KEEPER_PROCESS)));
  } catch {
    return null;
  }
}

/**
 * Stop the keeper in `dir` (if it still runs) and return once its process is gone: it is asked,
 * then killed if it has not ended within 5 s. Its directory is removed.
 */
export async function stopKeeper(dir: string): Promise<void> {
  const ref = await keeperProcess(dir);
  await controlCall(join(dir, KEEPER_SOCKET), { op: "kill" }, 5000).catch((e) => {
    if (!(e instanceof ControlUnavailable)) throw e;
  });
  const alive = () => {
    try {
      return isAlive(ref ?? undefined);
    } catch (e) {
      if (e instanceof ProcUnreadable) return false; // no /proc to read: its socket tells
      throw e;
    }
  };
  const until = Date.now() + 5000;
  while (Date.now() < until && (alive() || (await exists(join(dir, KEEPER_SOCKET))))) {
    await new Promise((r) => setTimeout(r, 20));
  }
  if (ref && alive()) {
    try {
      Deno.kill(ref.pid, "SIGKILL");
    } catch { /* gone meanwhile */ }
  }
  await removeTree(dir).catch(() => {});
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}
