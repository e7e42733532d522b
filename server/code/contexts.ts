/**
 * Code contexts: each a live kernel with its language, working directory and environment, owned
 * by the identity that made it. Variables, imports and the working directory persist between
 * runs; `restart` gives a fresh kernel; `remove` ends the kernel and its process group. A run
 * without a context uses the identity's default context for its language and directory, made
 * on first use. Contexts outlive the requests (and clients) that use them and end with the server.
 *
 * @module
 */

import { confinements } from "../confine/confinement.ts";
import { join } from "node:path";
import { ApiError } from "../errors.ts";
import { environmentStore } from "../process/environment.ts";
import { ProcessTree } from "../process/trees.ts";
import type { ServerState, Service } from "../state.ts";
import { type BridgeEvent, KernelBridge } from "./bridge.ts";
import { kernelLaunch, type Language } from "./languages.ts";
import { changedFiles, type OutputFileRecord, snapshot } from "./outputs.ts";

/** Contexts one identity may have at once (default contexts included). */
export const MAX_CONTEXTS = 32;

/** A context as the wire shows it. */
export interface ContextRecord {
  /** `ctx_` and 12 hex digits. */
  id: string;
  /** Its language. */
  language: Language;
  /** Working directory the kernel started in. */
  cwd: string;
  /** Where files for `output_files` go (`<cwd>/outputs`, also `$SANDBAR_OUTPUTS_DIR`). */
  outputs_dir: string;
  /** Names of the variables given at creation (values are not shown). */
  env_keys: string[];
  /** The kernel's pid (its process-group id). */
  pid: number | null;
  /** Whether it is the default context of its language and directory. */
  default: boolean;
  /** ISO 8601. */
  created_at: string;
  /** ISO 8601 of the last restart, or null. */
  restarted_at: string | null;
  /** Runs so far. */
  runs: number;
}

/** What a run reports besides its events. */
export interface RunOutcome {
  /** The run passed its timeout and was interrupted. */
  timed_out: boolean;
  /** The kernel had to be restarted (it died, or ignored the interrupt): its state is gone. */
  restarted: boolean;
  /** The kernel's execution counter. */
  execution_count: number | null;
  /** Files new or changed in the outputs directory. */
  output_files: OutputFileRecord[];
}

interface Context {
  record: ContextRecord;
  identity: string;
  key: string | null;
  /** The kernel's process tree: everything it starts ends with the context. */
  tree: ProcessTree | null;
}

/**
 * The tree of a kernel that has just started (and run none of a caller's code yet): `pid` and
 * everything it will start, ended when the context is removed or restarted or the server stops.
 */
function kernelTree(pid: unknown): ProcessTree | null {
  if (typeof pid !== "number") return null;
  const tree = new ProcessTree();
  tree.adopt(pid);
  return tree;
}

/**
 * The contexts service (one per server), created on first use.
 *
 * @example
 * ```ts ignore
 * const ctx = await codeContexts(state).create("default", { language: "python", cwd, env });
 * ```
 */
export class CodeContexts implements Service {
  readonly #state: ServerState;
  readonly #contexts = new Map<string, Context>();
  readonly #defaults = new Map<string, Promise<Context>>();
  /** One bridge per identity: its kernels share its confinement, never another identity's. */
  readonly #bridges = new Map<string, Promise<KernelBridge>>();
  #closed = false;

  /** Made by {@linkcode codeContexts}. */
  constructor(state: ServerState) {
    this.#state = state;
  }

  #bridgeFor(identity: string): Promise<KernelBridge> {
    if (this.#closed) throw new Error("the server is shutting down");
    const current = this.#bridges.get(identity);
    const next = (async () => {
      const b = await current?.catch(() => undefined);
      if (b?.alive) return b;
      // A bridge that died took its kernels with it (and their trees go now): forget them.
      if (b) {
        for (const [id, c] of this.#contexts) {
          if (c.identity === identity) {
            c.tree?.end(true);
            this.#contexts.delete(id);
          }
        }
      }
      const env = environmentStore(this.#state).forProcess({});
      return await KernelBridge.start(this.#state, identity, env);
    })();
    this.#bridges.set(identity, next);
    next.catch(() => {
      if (this.#bridges.get(identity) === next) this.#bridges.delete(identity);
    });
    return next;
  }

  /** Make a context and start its kernel. */
  async create(
    identity: string,
    options: { language: Language; cwd: string; env: Record<string, string>; envKeys: string[] },
    key: string | null = null,
  ): Promise<ContextRecord> {
    return (await this.#create(identity, options, key)).record;
  }

  async #create(
    identity: string,
    options: { language: Language; cwd: string; env: Record<string, string>; envKeys: string[] },
    key: string | null,
  ): Promise<Context> {
    const owned = [...this.#contexts.values()].filter((c) => c.identity === identity);
    if (owned.length >= MAX_CONTEXTS) {
      throw new ApiError(
        "concurrency_limited",
        `${MAX_CONTEXTS} code contexts exist already; remove one first`,
        { param: "context_id" },
      );
    }
    const system = confinements(this.#state).system() ?? undefined;
    const launch = await kernelLaunch(options.language, options.env, system);
    const hex = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16))
      .map((h) => h.padStart(2, "0")).join("");
    const id = `ctx_${hex}`;
    const outputs = join(options.cwd, "outputs");
    await Deno.mkdir(outputs, { recursive: true }).catch(() => {});
    const bridge = await this.#bridgeFor(identity);
    const answer = await bridge.request({
      op: "start",
      kid: id,
      kind: launch.kind,
      argv: launch.argv,
      interrupt: launch.interrupt,
      cwd: options.cwd,
      // A temporary directory of its own, writable whatever the working directory is, unless
      // the caller named one.
      tmp: !options.envKeys.includes("TMPDIR"),
      // A HOME outside paths.allow is closed to a confined kernel: it gets the identity's own.
      env: confinements(this.#state).environment(identity, {
        ...options.env,
        ...launch.env,
        SANDBAR_OUTPUTS_DIR: outputs,
      }),
    }).catch((e) => {
      throw new ApiError("process_invalid", `The ${options.language} kernel did not start: ${e}`, {
        param: "language",
        cause: e,
      });
    });
    const context: Context = {
      identity,
      key,
      tree: kernelTree(answer.pid),
      record: {
        id,
        language: options.language,
        cwd: options.cwd,
        outputs_dir: outputs,
        env_keys: options.envKeys,
        pid: typeof answer.pid === "number" ? answer.pid : null,
        default: key !== null,
        created_at: new Date().toISOString(),
        restarted_at: null,
        runs: 0,
      },
    };
    this.#contexts.set(id, context);
    return context;
  }

  /** The default context of `identity` for a language and directory, made on first use. */
  async defaultContext(
    identity: string,
    options: { language: Language; cwd: string; env: Record<string, string> },
  ): Promise<ContextRecord> {
    const key = `${identity}\0${options.language}\0${options.cwd}`;
    let made = this.#defaults.get(key);
    const live = made && await made.then((c) => this.#contexts.has(c.record.id), () => false);
    if (!made || !live) {
      made = this.#create(identity, { ...options, envKeys: [] }, key);
      this.#defaults.set(key, made);
      made.catch(() => this.#defaults.delete(key));
    }
    return (await made).record;
  }

  /** The context `id` of `identity`, or `not_found`. */
  get(identity: string, id: string): ContextRecord {
    const c = this.#contexts.get(id);
    if (!c || c.identity !== identity) {
      throw new ApiError("not_found", `No code context ${id}`, { param: "context_id" });
    }
    return c.record;
  }

  /** The contexts of `identity`, oldest first. */
  list(identity: string): ContextRecord[] {
    return [...this.#contexts.values()].filter((c) => c.identity === identity)
      .map((c) => c.record).sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  /** Run code in a context; events arrive through `onEvent` as the kernel sends them. */
  async run(
    identity: string,
    id: string,
    code: string,
    options: { timeoutS: number; env: Record<string, string> },
    onEvent: (e: BridgeEvent) => void,
  ): Promise<RunOutcome> {
    const record = this.get(identity, id);
    const context = this.#contexts.get(id)!;
    const bridge = await this.#bridgeFor(identity);
    const before = await snapshot(record.outputs_dir);
    record.runs++;
    const answer = await bridge.request({
      op: "execute",
      kid: id,
      code,
      timeout: options.timeoutS,
      env: Object.keys(options.env).length > 0 ? options.env : undefined,
    }, onEvent);
    if (answer.restarted) {
      record.restarted_at = new Date().toISOString();
      this.#retree(context, answer.pid);
    }
    return {
      timed_out: answer.timed_out === true,
      restarted: answer.restarted === true,
      execution_count: typeof answer.execution_count === "number" ? answer.execution_count : null,
      output_files: changedFiles(record.outputs_dir, before, await snapshot(record.outputs_dir)),
    };
  }

  /** A fresh kernel for the context: every variable and import is gone. */
  async restart(identity: string, id: string): Promise<ContextRecord> {
    const record = this.get(identity, id);
    this.#contexts.get(id)?.tree?.end();
    const answer = await (await this.#bridgeFor(identity)).request({ op: "restart", kid: id });
    record.pid = typeof answer.pid === "number" ? answer.pid : null;
    const context = this.#contexts.get(id);
    if (context) this.#retree(context, answer.pid);
    record.restarted_at = new Date().toISOString();
    return record;
  }

  /** The old kernel's tree ends (whatever it left running); the new kernel gets one. */
  #retree(context: Context, pid: unknown): void {
    context.tree?.end(true);
    context.tree = kernelTree(pid);
    if (typeof pid === "number") context.record.pid = pid;
  }

  /** End the context's kernel and everything it started. */
  async remove(identity: string, id: string): Promise<void> {
    this.get(identity, id);
    const context = this.#contexts.get(id)!;
    this.#contexts.delete(id);
    // The tree first, while the kernel still leads it: then the bridge cleans up after it.
    context.tree?.end();
    await (await this.#bridgeFor(identity)).request({ op: "stop", kid: id }).catch(() => {});
  }

  /** End every kernel with the bridge. */
  async close(): Promise<void> {
    this.#closed = true;
    const bridges = await Promise.all(
      [...this.#bridges.values()].map((b) => b.catch(() => undefined)),
    );
    this.#bridges.clear();
    for (const c of this.#contexts.values()) c.tree?.end(true);
    this.#contexts.clear();
    await Promise.all(bridges.map((b) => b?.close()));
  }
}

/** The server's code contexts. */
export function codeContexts(state: ServerState): CodeContexts {
  return state.service("code", () => new CodeContexts(state));
}
