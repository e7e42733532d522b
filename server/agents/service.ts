/**
 * The agents group's long-lived service: the store, the secret box and the configuration,
 * opened once at start (so a store written by a newer sandbar, or sealed with another key,
 * stops the server with a clear message instead of failing requests later).
 *
 * @module
 */

import { join } from "node:path";
import type { ServerState, Service } from "../state.ts";
import type { AgentsConfig } from "./config.ts";
import type { AgentsCore } from "./core.ts";
import { SecretBox } from "./crypto.ts";
import { recoverEnvironments } from "./domain/environments.ts";
import { AgentRuntime } from "./runtime/runtime.ts";
import { DATA_DIR_MODE, makePrivate } from "./data_dir.ts";
import { AgentStore, StoreOpenError } from "./store.ts";
import { AutomationScheduler } from "./automations/scheduler.ts";
import { type SchedulerClock, systemClock } from "./automations/schedule.ts";

/** Uploads a stopped server left half written (`files/.upload-*`). */
async function removeUnfinishedUploads(dataDir: string): Promise<void> {
  const dir = join(dataDir, "files");
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(".upload-")) await Deno.remove(join(dir, entry.name));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** The service's key in the server state. */
export const AGENTS_SERVICE = "agents";

/** The store, the box and the configuration. */
export class AgentsService implements Service, AgentsCore {
  /** The durable store. */
  readonly store: AgentStore;
  /** Seals and opens secrets. */
  readonly box: SecretBox;
  /** What the group was given at start. */
  readonly config: AgentsConfig;
  /** Sessions, turns and their events. */
  readonly runtime: AgentRuntime;
  /** The automations' scheduler (started by the server once it is listening). */
  readonly automations: AutomationScheduler;
  /** Services of the resources (caches, in-flight upstream calls), closed with this one. */
  readonly #closers: (() => void | Promise<void>)[] = [];

  private constructor(
    store: AgentStore,
    box: SecretBox,
    config: AgentsConfig,
    clock: SchedulerClock,
  ) {
    this.store = store;
    this.box = box;
    this.config = config;
    this.runtime = new AgentRuntime(this);
    this.runtime.recover();
    this.automations = new AutomationScheduler(this, clock);
  }

  /**
   * Open the store in the data directory (created 0700 when missing). `clock` times the
   * automations (default the system's; tests give a fake one).
   */
  static async open(
    config: AgentsConfig,
    clock: SchedulerClock = systemClock,
  ): Promise<AgentsService> {
    try {
      await Deno.mkdir(config.dataDir, { recursive: true, mode: DATA_DIR_MODE });
      // What an older sandbar made readable by others (the store was 0644) is made private.
      makePrivate(config.dataDir);
    } catch (e) {
      throw new StoreOpenError(
        `cannot create the data directory ${config.dataDir}: ${(e as Error).message}`,
      );
    }
    const store = AgentStore.open(config.dataDir);
    try {
      const box = await SecretBox.forStore(store, config.dataDir, config.secretKey);
      recoverEnvironments(store);
      await removeUnfinishedUploads(config.dataDir);
      return new AgentsService(store, box, config, clock);
    } catch (e) {
      store.close();
      throw e;
    }
  }

  /** Run `close` when the service closes. */
  onClose(close: () => void | Promise<void>): void {
    this.#closers.push(close);
  }

  /** Close everything: running turns first (their processes killed), then the rest. */
  async close(): Promise<void> {
    // Synchronously first: a turn must learn the server is stopping before its processes die,
    // and no automation may start one after that.
    const scheduled = this.automations.close();
    const stopped = this.runtime.close();
    for (const c of this.#closers.splice(0).reverse()) await c();
    await scheduled;
    await stopped;
    this.store.close();
  }
}

/** The service of a running server (opened at start when any agents endpoint is on). */
export function agentsService(state: ServerState): AgentsService {
  return state.service<AgentsService>(AGENTS_SERVICE, () => {
    throw new Error("the agents store was not opened at start");
  });
}
