/**
 * Spawning a process as the leader of its own process group, and ending it with the group.
 *
 * `Deno.Command` has no `setpgid` option. Its `detached: true` makes the child call `setsid()`,
 * but through a `pre_exec` hook that turns Deno's fast `posix_spawn` into a `fork()` of the whole
 * runtime, about 7 ms a spawn on the test machine. So the program is started through util-linux's
 * `setsid` instead (one extra `exec`, about 1 ms), which makes it the leader of a new session and
 * process group whose id is its pid: `setsid` does not fork when, as here, its caller is not a
 * group leader. `detached` is the fallback where `setsid` is missing.
 *
 * Signals go to `-pid`, the whole group, so grandchildren (`bash -c 'sleep 100 & wait'`) die too.
 * When the leader exits, whatever it left in its group is killed as well: the pipes then reach end
 * of file and nothing outlives the process the caller started. Deno reaps the leader; orphaned
 * grandchildren are reaped by init.
 *
 * @module
 */

import { directArgv, resolveProgram } from "./direct.ts";
import type { StreamName } from "./output.ts";

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

/** A listener for output as it is read. */
export type ChunkListener = (type: StreamName, bytes: Uint8Array) => void;

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

let setsidPath: string | null | undefined;

/** util-linux's `setsid`, if installed. */
function setsid(): string | null {
  if (setsidPath !== undefined) return setsidPath;
  for (const candidate of ["/usr/bin/setsid", "/bin/setsid"]) {
    try {
      if (Deno.statSync(candidate).isFile) return (setsidPath = candidate);
    } catch { /* next */ }
  }
  return (setsidPath = null);
}

/** The argv to run: `argv` as given, `cmd` directly when it is plain words, else bash `-c`. */
function commandLine(request: SpawnRequest): { argv: string[]; env: Record<string, string> } {
  if (request.argv) return { argv: request.argv, env: request.env };
  const cmd = request.cmd ?? "";
  const direct = directArgv(cmd, request.cwd, request.env);
  // bash would have exported PWD to the program.
  if (direct) return { argv: direct, env: { ...request.env, PWD: request.cwd } };
  return { argv: [shell(), "-c", cmd], env: request.env };
}

/** Exit code of coreutils' `timeout` for a command it had to stop. */
export const TIMEOUT_EXIT_CODE = 124;

/**
 * A running process group.
 *
 * @example
 * ```ts ignore
 * const p = spawnGroup({ cmd: "echo hi", cwd: "/tmp", env: {}, timeoutMs: 5000 }, (t, b) => {});
 * const exit = await p.exited;
 * ```
 */
export class ManagedProcess {
  /** The pid, also the process-group id. */
  readonly pid: number;
  /** When it was spawned. */
  readonly startedAt: Date = new Date();
  /** Resolves once the leader has exited and both pipes are drained. */
  readonly exited: Promise<ExitInfo>;
  readonly #child: Deno.ChildProcess;
  readonly #t0 = performance.now();
  #stdin: WritableStreamDefaultWriter<Uint8Array> | null = null;
  #timedOut = false;
  #running = true;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Spawn `request`, sending output to `onChunk`. Throws `Deno.errors.NotFound` and friends. */
  constructor(request: SpawnRequest, onChunk: ChunkListener) {
    const line = commandLine(request);
    const leader = setsid();
    const [program, ...args] = leader ? [leader, ...line.argv] : line.argv;
    const wantsStdin = request.stdin === true || request.stdinText !== undefined;
    if (leader && request.argv) {
      // setsid would report a missing program as its own exit 1; keep the spawn error instead.
      resolveProgram(request.argv[0], request.cwd, line.env.PATH);
    }
    this.#child = new Deno.Command(program, {
      args,
      cwd: request.cwd,
      env: line.env,
      clearEnv: true,
      stdin: wantsStdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
      detached: leader === null,
    }).spawn();
    this.pid = this.#child.pid;
    if (wantsStdin) this.#stdin = this.#child.stdin.getWriter();
    if (request.stdinText !== undefined) {
      const text = request.stdinText;
      this.write(new TextEncoder().encode(text)).catch(() => {}).finally(() => this.closeStdin());
    }
    if (request.timeoutMs > 0) {
      this.#timer = setTimeout(() => {
        this.#timedOut = true;
        this.kill("SIGKILL");
      }, request.timeoutMs);
    }
    this.exited = this.#watch(onChunk);
  }

  async #watch(onChunk: ChunkListener): Promise<ExitInfo> {
    const pump = async (stream: ReadableStream<Uint8Array>, type: StreamName) => {
      try {
        for await (const bytes of stream) onChunk(type, bytes);
      } catch { /* the pipe broke: the process is gone */ }
    };
    const readers = Promise.all([
      pump(this.#child.stdout, "stdout"),
      pump(this.#child.stderr, "stderr"),
    ]);
    const status = await this.#child.status;
    this.#running = false;
    const executionTime = (performance.now() - this.#t0) / 1000;
    clearTimeout(this.#timer);
    // Whatever the leader left in its group dies with it, so the pipes close.
    this.#signalGroup("SIGKILL");
    await readers;
    await this.closeStdin();
    const exitCode = this.#timedOut ? TIMEOUT_EXIT_CODE : status.code;
    return {
      exitCode,
      signal: status.signal ?? null,
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
    return this.#stdin !== null;
  }

  /** Seconds since spawn. */
  get elapsed(): number {
    return (performance.now() - this.#t0) / 1000;
  }

  #signalGroup(signal: Deno.Signal): boolean {
    try {
      Deno.kill(-this.pid, signal);
      return true;
    } catch {
      // No member left, or `setsid` has not made the group yet: the leader alone, then.
      try {
        if (this.#running) Deno.kill(this.pid, signal);
        return this.#running;
      } catch {
        return false;
      }
    }
  }

  /** Send a signal to the whole group; false when the process has exited. */
  kill(signal: Deno.Signal = "SIGTERM"): boolean {
    if (!this.#running) return false;
    return this.#signalGroup(signal);
  }

  /** Write to stdin; throws when it is closed. */
  async write(bytes: Uint8Array): Promise<void> {
    if (!this.#stdin) throw new Error("stdin is closed");
    await this.#stdin.write(bytes);
  }

  /** Close stdin (the program sees end of file). */
  async closeStdin(): Promise<void> {
    const w = this.#stdin;
    this.#stdin = null;
    if (w) await w.close().catch(() => {});
  }
}
