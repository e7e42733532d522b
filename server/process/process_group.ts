/**
 * Spawning a process as the leader of its own process group, and ending it with the group.
 *
 * Where libc allows (Linux, glibc 2.29+, kernel 5.3+), the process is started by `posix_spawn`
 * over FFI with `POSIX_SPAWN_SETSID` (`native_child.ts`): as cheap as a bare `Deno.Command`
 * spawn. Elsewhere `Deno.Command` starts it through util-linux's `setsid` (`command_child.ts`),
 * one extra program start. Either way it leads a new session and process group whose id is its
 * pid.
 *
 * Signals go to `-pid`, the whole group, so grandchildren (`bash -c 'sleep 100 & wait'`) die too.
 * When the leader exits, whatever it left in its group is killed as well, and so is every other
 * process of its tree (`trees.ts`: a cgroup where the server can make one, else its session and
 * descendants), even one that called `setsid` or double-forked: the pipes then reach end of file
 * and nothing outlives the process the caller started. The leader is reaped by the server;
 * orphaned grandchildren are reaped by init.
 *
 * @module
 */

import type { Spawner } from "../confine/spawner.ts";
import type { ChildSpec, ChunkListener, SpawnedChild } from "./child.ts";
import { CommandChild } from "./command_child.ts";
import { directArgv } from "./direct.ts";
import { NativeChild } from "./native_child.ts";
import { nativeSpawnSupported } from "./posix_spawn.ts";
import { ProcessTree } from "./trees.ts";

export type { ChunkListener } from "./child.ts";

/** How to start one process. */
export interface SpawnRequest {
  /** Shell form: run by bash `-c`. */
  cmd?: string;
  /** Exec form: the program and its arguments. */
  argv?: string[];
  /** Absolute working directory (already guarded). */
  cwd: string;
  /** The complete environment (from the environment store). */
  env: Record<string, string>;
  /** Milliseconds until the group is killed; 0 for none. */
  timeoutMs: number;
  /** Keep a stdin pipe open for writes. */
  stdin?: boolean;
  /** Text to write to stdin before closing it (implies a pipe). */
  stdinText?: string;
  /** The confined thread that starts it (see `server/confine/`); none: unconfined. */
  spawner?: Spawner;
}

/** How a process ended. */
export interface ExitInfo {
  /** 124 after a timeout, `128 + n` after signal n, else the exit status. */
  exitCode: number;
  /** The signal that ended it, if one did. */
  signal: string | null;
  /** Whether the timeout killed it. */
  timedOut: boolean;
  /** Seconds from spawn to exit. */
  executionTime: number;
  /** When it ended. */
  endedAt: Date;
}

const SHELLS = ["/bin/bash", "/usr/bin/bash", "/bin/sh"];
let shellPath: string | undefined;

/** The shell that runs `cmd` strings: bash where present, else sh. */
export function shell(): string {
  if (shellPath) return shellPath;
  for (const candidate of SHELLS) {
    try {
      if (Deno.statSync(candidate).isFile) return (shellPath = candidate);
    } catch { /* next */ }
  }
  return (shellPath = "/bin/sh");
}

/** The argv to run: `argv` as given, `cmd` directly when it is plain words, else bash `-c`. */
function commandLine(
  request: SpawnRequest,
): { argv: string[]; env: Record<string, string>; located: boolean } {
  if (request.argv) return { argv: request.argv, env: request.env, located: false };
  const cmd = request.cmd ?? "";
  const direct = directArgv(cmd, request.cwd, request.env);
  // bash would have exported PWD to the program.
  if (direct) return { argv: direct, env: { ...request.env, PWD: request.cwd }, located: true };
  return { argv: [shell(), "-c", cmd], env: request.env, located: false };
}

/** Exit code of coreutils' `timeout` for a command it had to stop. */
export const TIMEOUT_EXIT_CODE = 124;

/**
 * A running process group.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { ManagedProcess } from "./process_group.ts";
 * const p = new ManagedProcess({ cmd: "sleep 30", cwd: "/", env: {}, timeoutMs: 50 }, () => {});
 * const exit = await p.exited;
 * assert.equal(exit.timedOut, true);
 * assert.equal(exit.exitCode, 124);
 * ```
 */
export class ManagedProcess {
  /** The pid, also the process-group id. */
  readonly pid: number;
  /** Everything the process and its descendants start: ended with the leader. */
  readonly tree: ProcessTree = new ProcessTree();
  /** When it was spawned. */
  readonly startedAt: Date = new Date();
  /** Resolves once the leader has exited and both pipes are drained. */
  readonly exited: Promise<ExitInfo>;
  /** Resolves once the leader has exited and been reaped (its pipes may still be open). */
  readonly reaped: Promise<void>;
  readonly #child: SpawnedChild;
  readonly #t0 = performance.now();
  #timedOut = false;
  #running = true;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Spawn `request`, sending output to `onChunk`. Throws `Deno.errors.NotFound` and friends. */
  constructor(request: SpawnRequest, onChunk: ChunkListener) {
    const line = commandLine(request);
    const spec: ChildSpec = {
      argv: line.argv,
      cwd: request.cwd,
      env: line.env,
      stdin: request.stdin === true || request.stdinText !== undefined,
      located: line.located,
      spawner: request.spawner,
    };
    try {
      this.#child = this.tree.spawn(
        () =>
          nativeSpawnSupported() ? new NativeChild(spec, onChunk) : new CommandChild(spec, onChunk),
        !request.spawner?.besideServer,
      );
    } catch (e) {
      this.tree.end();
      throw e;
    }
    this.pid = this.#child.pid;
    if (request.stdinText !== undefined) {
      const text = request.stdinText;
      this.write(new TextEncoder().encode(text)).catch(() => {}).finally(() => this.closeStdin());
    }
    if (request.timeoutMs > 0) {
      this.#timer = setTimeout(() => {
        this.#timedOut = true;
        // The leader may be gone while a runaway that left its group (`setsid prog &`) holds
        // the pipes: the deadline then stops the reading instead.
        if (this.#running) this.kill("SIGKILL");
        else this.#child.release();
      }, request.timeoutMs);
    }
    this.reaped = this.#child.status.then(() => {});
    this.exited = this.#watch();
  }

  async #watch(): Promise<ExitInfo> {
    const status = await this.#child.status;
    this.#running = false;
    const executionTime = (performance.now() - this.#t0) / 1000;
    // Nothing the leader started outlives it: a `setsid` or double-forked runaway that holds
    // the pipes is ended here too, so the output reaches its end. The leader is reaped.
    this.tree.end(true);
    await this.#child.drained;
    clearTimeout(this.#timer);
    await this.#child.closeStdin(true);
    const exitCode = this.#timedOut ? TIMEOUT_EXIT_CODE : status.code;
    return {
      exitCode,
      signal: status.signal,
      timedOut: this.#timedOut,
      executionTime,
      endedAt: new Date(),
    };
  }

  /** Whether the leader is still running. */
  get running(): boolean {
    return this.#running;
  }

  /** Whether stdin can still be written. */
  get stdinOpen(): boolean {
    return this.#child.stdinOpen;
  }

  /** Seconds since spawn. */
  get elapsed(): number {
    return (performance.now() - this.#t0) / 1000;
  }

  /**
   * Send a signal to the whole group; false when the process has exited. `SIGKILL` ends the
   * whole tree (every descendant, wherever its group or session went).
   */
  kill(signal: Deno.Signal = "SIGTERM"): boolean {
    if (!this.#running) return false;
    if (signal === "SIGKILL") this.tree.end();
    try {
      Deno.kill(-this.pid, signal);
      return true;
    } catch {
      // No group (the `setsid` fallback has not made it yet): the leader alone, then.
      try {
        Deno.kill(this.pid, signal);
        return true;
      } catch {
        return false;
      }
    }
  }

  /** Write to stdin; throws when it is closed. */
  write(bytes: Uint8Array): Promise<void> {
    return this.#child.write(bytes);
  }

  /** Close stdin once what was written has gone (the program then sees end of file). */
  closeStdin(): Promise<void> {
    return this.#child.closeStdin();
  }

  /**
   * Stop reading and drop every descriptor still held for the process, so `exited` resolves
   * with what was read (the server is stopping).
   */
  release(): void {
    this.#child.release();
  }
}
