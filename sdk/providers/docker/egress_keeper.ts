/**
 * The egress keeper of a docker sandbox created with `network`: a host process (detached, like
 * the local provider's supervisor) that lives exactly as long as the sandbox's container. It runs
 * the sandbox's egress proxy (`SandboxEgress`, the local provider's) on a Unix socket in the
 * sandbox's host directory, which is bound read-only into the container, where the relay in the
 * server's process bridges 127.0.0.1:3128 to it (the local provider's bridge); and it waits on
 * the engine's `POST /containers/{id}/wait`, ending itself when the container stops (killed, or
 * its lifetime over). Any SDK process reaches it through its control socket (`control.ts`'s
 * protocol) in a directory of its own outside the container, named by the container's
 * `sandbar.egress` label: `watch` (the creator: the container was started), `network_update`,
 * `network_audit`, `ping` and `kill`.
 *
 * ```sh
 * deno run -A egress_keeper.ts DIR    # DIR/config.json is read, then removed
 * ```
 *
 * It prints one line, `{"event":"ready","pid":…}` (or `{"event":"error",…}`), once its proxy
 * and control socket listen. The configuration (with the secrets' values) is read from
 * `config.json` in its directory (mode 0700, written by the creating process) and removed at
 * once: afterwards the secrets are in this process's memory alone. If no `watch` comes in time
 * (the creator died before starting the container), it ends; if the engine cannot be reached
 * for 10 s, it takes the container as gone.
 *
 * @module
 */

import { join } from "node:path";
import { type ControlRequest, type ControlResponse, serveControl } from "../local/control.ts";
import { SandboxEgress } from "../local/egress.ts";
import { processRef } from "../local/procfs.ts";
import { KEEPER_AUDIT, KEEPER_PROCESS, KEEPER_SOCKET, type KeeperConfig } from "./egress.ts";
import { Engine, engineAddress } from "./engine.ts";

/** How long the engine may be unreachable before the keeper takes the container as gone. */
const ENGINE_GRACE_MS = 10_000;

class Keeper {
  readonly #dir: string;
  readonly #config: KeeperConfig;
  readonly #engine: Engine;
  readonly #egress: SandboxEgress;
  #stopControl: () => void = () => {};
  #watching = false;
  #stopping = false;
  #startTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(dir: string, config: KeeperConfig, egress: SandboxEgress) {
    this.#dir = dir;
    this.#config = config;
    this.#engine = new Engine(engineAddress(config.engine));
    this.#egress = egress;
  }

  serve(): void {
    this.#stopControl = serveControl(join(this.#dir, KEEPER_SOCKET), (r) => this.#handle(r));
    // The creator says when the container was started; if it never does, it died.
    this.#startTimer = setTimeout(() => {
      if (!this.#watching) this.stop("the container was never started");
    }, this.#config.startTimeoutMs);
  }

  #handle(request: ControlRequest): Promise<ControlResponse> {
    return Promise.resolve(this.#answer(request));
  }

  #answer(request: ControlRequest): ControlResponse {
    const ok = { ok: true as const, status: "running", endAt: "" };
    switch (request.op) {
      case "ping":
        return ok;
      case "watch":
        if (!this.#watching) {
          this.#watching = true;
          clearTimeout(this.#startTimer);
          this.#watch().catch((e) => this.stop(`watching failed: ${(e as Error).message}`));
        }
        return ok;
      case "network_update":
        return { ...ok, closed: this.#egress.update(request.network) };
      case "network_audit":
        return { ...ok, audit: this.#egress.recent(request.limit) };
      case "kill":
        setTimeout(() => this.stop("killed"), 0);
        return ok;
      default:
        return { ok: false, error: `unknown op ${request.op}` };
    }
  }

  /** Whether the container runs: true, false (gone or stopped), or null (no engine). */
  async #running(): Promise<boolean | null> {
    try {
      const c = await this.#engine.call<{ State: { Running: boolean } } | null>(
        "GET",
        `/containers/${this.#config.container}/json`,
        { accept: [404] },
      );
      return c?.State.Running ?? false;
    } catch {
      return null;
    }
  }

  /** Wait until the container no longer runs, then stop. */
  async #watch(): Promise<void> {
    let unreachableSince: number | null = null;
    while (!this.#stopping) {
      try {
        const res = await this.#engine.fetch(
          "POST",
          `/containers/${this.#config.container}/wait`,
          { query: { condition: "not-running" }, accept: [404] },
        );
        // The engine sends the head at once and the body when the container stops.
        await res.text();
        return this.stop("the container ended");
      } catch { /* the engine went away, or cut the wait: look */ }
      const running = await this.#running();
      if (running === false) return this.stop("the container ended");
      if (running === null) {
        unreachableSince ??= Date.now();
        if (Date.now() - unreachableSince > ENGINE_GRACE_MS) {
          return this.stop("the engine cannot be reached");
        }
      } else unreachableSince = null;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  /** Close everything this keeper made and exit. */
  async stop(why: string): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    console.error(`sandbar egress keeper ${this.#config.id}: stopping (${why})`);
    clearTimeout(this.#startTimer);
    this.#stopControl();
    await this.#egress.close().catch(() => {});
    await Deno.remove(this.#config.socket).catch(() => {});
    await Deno.remove(this.#config.caDir, { recursive: true }).catch(() => {});
    this.#engine.close();
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
    Deno.exit(0);
  }
}

async function main(dir: string): Promise<number> {
  const say = (event: Record<string, unknown>) => console.log(JSON.stringify(event));
  const configFile = join(dir, "config.json");
  let config: KeeperConfig;
  try {
    config = JSON.parse(await Deno.readTextFile(configFile));
  } catch (e) {
    say({ event: "error", message: `no configuration in ${dir}: ${(e as Error).message}` });
    return 1;
  } finally {
    await Deno.remove(configFile).catch(() => {});
  }
  let egress: SandboxEgress;
  try {
    await Deno.remove(config.socket).catch(() => {});
    egress = await SandboxEgress.start(
      config.socket,
      config.id,
      config.network,
      join(dir, KEEPER_AUDIT),
      config.caDir,
    );
  } catch (e) {
    say({ event: "error", message: `cannot start the egress proxy: ${(e as Error).message}` });
    return 1;
  }
  const keeper = new Keeper(dir, config, egress);
  keeper.serve();
  // Who it is, for a kill from any process to wait for its end (pid and start time).
  await Deno.writeTextFile(join(dir, KEEPER_PROCESS), JSON.stringify(processRef(Deno.pid)), {
    mode: 0o600,
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => keeper.stop(signal));
  }
  say({ event: "ready", pid: Deno.pid });
  return 0;
}

if (import.meta.main) {
  const [dir] = Deno.args;
  if (!dir) {
    console.error("usage: egress_keeper.ts DIR");
    Deno.exit(2);
  }
  try {
    const code = await main(dir);
    if (code !== 0) Deno.exit(code);
  } catch (e) {
    console.log(JSON.stringify({ event: "error", message: (e as Error).message }));
    Deno.exit(1);
  }
}
