/**
 * The server's side of the kernel bridge: one Python process (`kernel_bridge.py`) that
 * runs every kernel of every code context, spoken to in JSON lines over its stdin and stdout.
 *
 * Why a bridge rather than Jupyter's server over HTTP and WebSocket: Debian's `jupyter-server`
 * (1.x) cannot give a kernel its own environment through its REST API, a loopback port with a
 * token is one more thing to guard, and the bridge drives the kernels with `jupyter_client`, the
 * same library `jupyter-server` uses for it. The bridge has no listening socket at all.
 *
 * Nothing outlives the server: the bridge reads its stdin until end of file, which comes when the
 * server exits in any way (SIGKILL included), then kills every kernel's process group; each
 * kernel also has `PR_SET_PDEATHSIG` to die with the bridge.
 *
 * @module
 */

import { confinements } from "../confine/confinement.ts";
import { MAX_KERNEL_IDENTITIES } from "../confine/kernel_ports.ts";
import { ApiError } from "../errors.ts";
import { join } from "node:path";
import { ManagedProcess } from "../process/process_group.ts";
import type { ServerState } from "../state.ts";
// A text import: the Python file ships with the package and loads like a module (from a checkout
// or a registry), so the narrowed server needs no read access to its sources.
import KERNEL_BRIDGE_SOURCE from "./kernel_bridge.py" with { type: "text" };
import { kernelPython, notInstalled } from "./languages.ts";

/** One event of a run, as the bridge sends it. */
export type BridgeEvent =
  | { event: "stdout" | "stderr"; text: string }
  | { event: "result"; data: Record<string, unknown>; main: boolean }
  | { event: "error"; name: string; value: string; traceback: string[] };

type Answer = Record<string, unknown> & { ok: boolean; error?: string };

interface Pending {
  resolve: (answer: Answer) => void;
  onEvent?: (e: BridgeEvent) => void;
}

/**
 * Start the bridge: the one place kernels are spawned from (the bridge starts them), so that a
 * confinement of the server's processes wraps it here.
 */
export async function spawnKernelBridge(
  state: ServerState,
  identity: string,
  env: Record<string, string>,
  onLine: (line: string) => void,
  onStderr: (text: string) => void,
): Promise<ManagedProcess> {
  const confined = confinements(state);
  const python = await kernelPython(confined.system() ?? undefined);
  if (!python) throw notInstalled();
  // The kernels' ports: the identity's own block, closed to every other identity's processes.
  const ports = confined.kernelPorts(identity);
  if (!ports) {
    throw new ApiError(
      "process_invalid",
      `Not supported yet: code contexts for more than ${MAX_KERNEL_IDENTITIES} identities ` +
        `(identity ${JSON.stringify(identity)} has no block of kernel ports)`,
      { param: "language" },
    );
  }
  // The bridge and its kernels run confined as the identity's other processes do, so its files
  // live in that confinement's own directory: the rest of the state directory is closed to it.
  const dir = join(confined.scratchDir(identity), "code");
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const script = join(dir, "kernel_bridge.py");
  await Deno.writeTextFile(script, KERNEL_BRIDGE_SOURCE, { mode: 0o600 });
  // Jupyter's files (connection files, kernel configuration) stay in the server's private
  // directory: never the user's ~/.local/share/jupyter, ~/.jupyter or ~/.ipython.
  const jupyter = {
    JUPYTER_RUNTIME_DIR: join(dir, "runtime"),
    JUPYTER_CONFIG_DIR: join(dir, "config"),
    JUPYTER_DATA_DIR: join(dir, "data"),
    JUPYTER_PATH: join(dir, "data"),
    IPYTHONDIR: join(dir, "ipython"),
    JUPYTER_PLATFORM_DIRS: "1",
  };
  const decoder = new TextDecoder();
  const errors = new TextDecoder();
  let buffered = "";
  return new ManagedProcess(
    {
      argv: [python, "-u", script],
      cwd: dir,
      env: {
        ...confined.environment(identity, env),
        ...jupyter,
        PYTHONDONTWRITEBYTECODE: "1",
        SANDBAR_KERNEL_PORTS: `${ports.first}-${ports.last}`,
      },
      timeoutMs: 0,
      stdin: true,
      spawner: confined.spawner(identity) ?? undefined,
    },
    (type, bytes) => {
      if (type === "stderr") return onStderr(errors.decode(bytes, { stream: true }));
      buffered += decoder.decode(bytes, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        onLine(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
    },
  );
}

/**
 * A connection to the bridge.
 *
 * @example
 * ```ts ignore
 * const bridge = await KernelBridge.start(state, env);
 * await bridge.request({ op: "start", kid: "k1", kind: "bash", cwd: "/", env: {} });
 * ```
 */
export class KernelBridge {
  readonly #pending = new Map<number, Pending>();
  #process!: ManagedProcess;
  #next = 1;
  #stderr = "";
  #dead: string | null = null;

  private constructor() {}

  /** Start a bridge. */
  static async start(
    state: ServerState,
    identity: string,
    env: Record<string, string>,
  ): Promise<KernelBridge> {
    const bridge = new KernelBridge();
    bridge.#process = await spawnKernelBridge(
      state,
      identity,
      env,
      (line) => bridge.#onLine(line),
      (text) => (bridge.#stderr = (bridge.#stderr + text).slice(-4096)),
    );
    bridge.#process.exited.then((exit) => {
      bridge.#dead = `the kernel bridge exited (${exit.exitCode}): ${bridge.#stderr.trim()}`;
      for (const p of bridge.#pending.values()) p.resolve({ ok: false, error: bridge.#dead });
      bridge.#pending.clear();
    });
    return bridge;
  }

  /** The bridge's pid. */
  get pid(): number {
    return this.#process.pid;
  }

  /** Whether the bridge is still running. */
  get alive(): boolean {
    return this.#dead === null;
  }

  #onLine(line: string): void {
    let msg: Answer & { re?: number; event?: string };
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    const pending = this.#pending.get(msg.re ?? -1);
    if (!pending) return;
    if (msg.event) {
      pending.onEvent?.(msg as unknown as BridgeEvent);
      return;
    }
    this.#pending.delete(msg.re!);
    pending.resolve(msg);
  }

  /** Send one request; resolves with its answer. Throws when the bridge refuses or is gone. */
  async request(
    body: Record<string, unknown>,
    onEvent?: (e: BridgeEvent) => void,
  ): Promise<Answer> {
    if (this.#dead) throw new Error(this.#dead);
    const id = this.#next++;
    const answer = new Promise<Answer>((resolve) => this.#pending.set(id, { resolve, onEvent }));
    await this.#process.write(new TextEncoder().encode(JSON.stringify({ id, ...body }) + "\n"));
    const got = await answer;
    if (!got.ok) throw new Error(got.error ?? "the kernel bridge failed");
    return got;
  }

  /** End the bridge and with it every kernel. */
  async close(): Promise<void> {
    await this.#process.closeStdin().catch(() => {});
    const timer = setTimeout(() => this.#process.kill("SIGKILL"), 5000);
    await this.#process.exited;
    clearTimeout(timer);
  }
}
