/**
 * The environment store: the one place that says what environment a process the server starts
 * gets (`shell`, `shell_stream`, `process_start`, `run_code`, terminals). It is the server's own
 * environment **less its credentials**, plus what `POST /system/env` set; a request's own `env`
 * map goes on top for that process only.
 *
 * Credentials removed, whatever the server was started with: `SVC_SERVER_TOKEN`, every identity's
 * `token_env` variable, the server's `SANDBAR_*` settings, and any variable whose value is an
 * identity's token under whatever name (compared in constant time), and the agents group's
 * upstream key (`OPENAI_API_KEY`, or the policy's `agents.upstream.api_key_env`).
 *
 * @module
 */

import { tokensEqual } from "../../shared/tokens_equal.ts";
import { PROGRAM_PATH } from "../guards/commands/program_dirs.ts";
import type { CompiledPolicy } from "../policy/compile.ts";
import type { ServerState, Service } from "../state.ts";
import { LOADER_VARIABLES, nameMatches, SERVER_RESERVED_VARIABLES } from "../guards/env/index.ts";

/** Shortest value that can be a token (the policy refuses shorter ones). */
const MIN_TOKEN_LENGTH = 16;

/**
 * What new processes get as their environment.
 */
export class EnvironmentStore implements Service {
  readonly #vars = new Map<string, string>();
  readonly #reserved: string[];

  /**
   * Build the store from the server's environment (default `Deno.env`), removing credentials.
   */
  constructor(policy: CompiledPolicy, source: Record<string, string> = Deno.env.toObject()) {
    this.#reserved = [...SERVER_RESERVED_VARIABLES];
    for (const identity of policy.source.identities ?? []) {
      if (identity.token_env) this.#reserved.push(identity.token_env);
    }
    // Under an allow list no process starts with a loader variable (`LD_PRELOAD`…): an allowed
    // program would otherwise map a library of someone else's choosing.
    if (policy.allowCommands !== undefined) this.#reserved.push(...LOADER_VARIABLES);
    const upstreamKey = policy.source.agents?.upstream?.api_key_env;
    if (upstreamKey) this.#reserved.push(upstreamKey);
    const tokens = policy.identities.map((i) => i.token);
    for (const [name, value] of Object.entries(source)) {
      if (this.#isReserved(name)) continue;
      if (value.length >= MIN_TOKEN_LENGTH && tokens.some((t) => tokensEqual(value, t))) continue;
      this.#vars.set(name, value);
    }
  }

  #isReserved(name: string): boolean {
    return this.#reserved.some((p) => nameMatches(name, p));
  }

  /** The environment as it is now, sorted by name. */
  snapshot(): Record<string, string> {
    return Object.fromEntries([...this.#vars].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /**
   * Set (string) or remove (`null`) variables for processes started from now on. The caller has
   * already passed the map through the environment guard; reserved names are refused here too,
   * as a second line.
   */
  apply(changes: Record<string, string | null>): void {
    for (const [name, value] of Object.entries(changes)) {
      if (value === null) this.#vars.delete(name);
      else if (this.#isReserved(name)) throw new Error(`${name} is reserved by the server`);
      else this.#vars.set(name, value);
    }
  }

  /** The environment for one new process: the store with `extra` (already guarded) on top. */
  forProcess(extra: Record<string, string | null> = {}): Record<string, string> {
    const env = Object.fromEntries(this.#vars);
    for (const [name, value] of Object.entries(extra)) {
      if (value === null || this.#isReserved(name)) continue;
      Object.defineProperty(env, name, { value, enumerable: true, writable: true });
    }
    return env;
  }

  /**
   * The environment of the server's own helper programs (`df`, `grep`, `sh`, `python3 -I` of the
   * system group; the probe for the kernel's Python). They run unconfined, so nothing a caller
   * set may choose them: a fixed system `PATH`, the C locale, and nothing from the store.
   */
  forServerTool(): Record<string, string> {
    return { PATH: SERVER_TOOL_PATH, LANG: "C.UTF-8", LC_ALL: "C.UTF-8" };
  }

  /** Nothing to release. */
  close(): void {}
}

/** Where the server looks for its own helper programs: system directories only. */
export const SERVER_TOOL_PATH: string = PROGRAM_PATH;

/**
 * The server's environment store (one per server).
 */
export function environmentStore(state: ServerState): EnvironmentStore {
  return state.service("environment", () => new EnvironmentStore(state.policy));
}
