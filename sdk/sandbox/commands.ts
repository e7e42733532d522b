/**
 * The `commands` module: shell commands in the sandbox, through the in-sandbox server's process
 * endpoints. Associated with the `shell` capability; not gated here (the server decides).
 *
 * Three verbs rather than a flag: `run`
 * waits for the result, `stream` yields output as it comes, `start` leaves the command running
 * and returns a {@linkcode CommandHandle} that any process can reattach to with `connect(pid)`.
 *
 * Timeouts: `timeout` is the command's own deadline in seconds (default 60, `0`
 * for none), enforced by the server (exit code 124, `timedOut: true`); the HTTP request is
 * given that deadline plus a margin, so a long command is never cut by a shorter client
 * timeout. It is unrelated to the sandbox's lifetime.
 *
 * @module
 */

import { ProviderFeatureNotSupportedError, ValidationError } from "../errors/mod.ts";
import { checkOptions } from "../errors/option_checks.ts";
import type { ProcessChunk, ProcessInfo, ProcessResult } from "../models/process.ts";
import { CommandHandle } from "./command_handle.ts";
import type { ModuleContext } from "./module_context.ts";

/** Options of `commands.run`, `stream` and `start`. */
export interface CommandOptions {
  /** Seconds before the server kills it (default 60; `0` for none). */
  timeout?: number;
  /** Environment variables on top of the sandbox's. */
  env?: Record<string, string>;
  /** Working directory (default the sandbox's home). */
  cwd?: string;
  /**
   * The user to run as. Every command of a local sandbox runs as its one user, so only the
   * empty string is accepted; anything else raises `ProviderFeatureNotSupportedError`.
   */
  user?: string;
}

/** Options of `commands.run`. */
export interface CommandRunOptions extends CommandOptions {
  /** Return a {@linkcode CommandHandle} at once instead of waiting. */
  background?: boolean;
  /** Called with each piece of stdout as it arrives (the result still has all of it). */
  onStdout?: (data: string) => unknown;
  /** Called with each piece of stderr as it arrives. */
  onStderr?: (data: string) => unknown;
}

const COMMAND_OPTIONS = ["timeout", "env", "cwd", "user"] as const;
const RUN_OPTIONS = [...COMMAND_OPTIONS, "background", "onStdout", "onStderr"] as const;

/** What the module hands the server client, validated. */
interface ServerRunOptions {
  timeout: number;
  env?: Record<string, string>;
  cwd?: string;
}

/** The `commands` module of a sandbox. */
export class CommandsModule {
  readonly #ctx: ModuleContext;

  /** Made by `Sandbox`. */
  constructor(ctx: ModuleContext) {
    this.#ctx = ctx;
  }

  #options(
    where: string,
    options: CommandOptions,
    known: readonly string[] = COMMAND_OPTIONS,
  ): ServerRunOptions {
    checkOptions(where, options, known);
    if (options.user !== undefined && options.user !== "") {
      throw new ProviderFeatureNotSupportedError(
        `Commands run as the sandbox's one user; cannot run as ${JSON.stringify(options.user)}`,
        {
          suggestion: "Leave out `user`: every command runs as the sandbox's one user, and " +
            "setuid programs such as sudo do not work inside.",
        },
      );
    }
    const timeout = options.timeout ?? 60;
    if (!(typeof timeout === "number" && timeout >= 0 && timeout <= 86_400)) {
      throw new ValidationError("timeout must be seconds from 0 (none) to 86400");
    }
    return { timeout, env: options.env, cwd: options.cwd || undefined };
  }

  /**
   * Run `cmd` (a `bash -c` string) and wait for its result. A non-zero exit is a result, not an
   * error: check `exitCode` or `success`. With `background: true`, returns a
   * {@linkcode CommandHandle} at once.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Sandbox } from "@sandbar/sandbar";
   *
   * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
   * const r = await sandbox.commands.run("ls /home/user; exit 2");
   * assert.equal(r.exitCode, 2); // a failing command is a result, not an error
   * const bg = await sandbox.commands.run("sleep 60", { background: true, timeout: 0 });
   * await bg.kill();
   * ```
   */
  run(cmd: string, options: CommandRunOptions & { background: true }): Promise<CommandHandle>;
  /** Run `cmd` and wait for its {@linkcode ProcessResult}. */
  run(cmd: string, options?: CommandRunOptions & { background?: false }): Promise<ProcessResult>;
  /** Run `cmd`: a result, or with `background: true` a {@linkcode CommandHandle}. */
  run(cmd: string, options?: CommandRunOptions): Promise<ProcessResult | CommandHandle>;
  async run(cmd: string, options: CommandRunOptions = {}): Promise<ProcessResult | CommandHandle> {
    const run = this.#options("commands.run", options, RUN_OPTIONS);
    if (options.background) {
      if (options.onStdout || options.onStderr) {
        throw new ValidationError(
          "commands.run: onStdout / onStderr do not apply with background: true",
          { suggestion: "Iterate the returned CommandHandle for its output as it comes." },
        );
      }
      return await this.#start(cmd, run);
    }
    const server = this.#ctx.server();
    const started = new Date();
    const result = options.onStdout || options.onStderr
      ? await server.process.runStream(cmd, {
        ...run,
        onStdout: options.onStdout,
        onStderr: options.onStderr,
      })
      : await server.process.shell(cmd, run);
    return await this.#withOom(result, started);
  }

  /** A SIGKILLed result says whether the kernel's OOM handling was what killed it. */
  async #withOom(result: ProcessResult, started: Date): Promise<ProcessResult> {
    const killed = result.signal === "SIGKILL" || result.exitCode === 137;
    if (!killed || !this.#ctx.oomKilledSince || result.timedOut) return result;
    return { ...result, oomKilled: await this.#ctx.oomKilledSince(started) };
  }

  /**
   * Run `cmd` and yield its output as it comes; the last chunk has type `exit`. Leaving the
   * loop early kills the command.
   */
  async *stream(cmd: string, options: CommandOptions = {}): AsyncGenerator<ProcessChunk> {
    yield* this.#ctx.server().process.shellStream(cmd, this.#options("commands.stream", options));
  }

  /** Start `cmd` in the background (its stdin stays open for `sendInput`). */
  async start(cmd: string, options: CommandOptions = {}): Promise<CommandHandle> {
    return await this.#start(cmd, this.#options("commands.start", options));
  }

  async #start(cmd: string, run: ServerRunOptions): Promise<CommandHandle> {
    const server = this.#ctx.server();
    const info = await server.process.start(cmd, { ...run, stdin: true });
    return new CommandHandle(server, info.pid);
  }

  /** A handle on a command started earlier (by this or any other process), by pid. */
  connect(pid: number): CommandHandle {
    return new CommandHandle(this.#ctx.server(), pid);
  }

  /** The commands running now. */
  async list(): Promise<ProcessInfo[]> {
    return await this.#ctx.server().process.list({ running: true });
  }

  /** SIGKILL to a command's whole process group. */
  async kill(pid: number): Promise<void> {
    await this.#ctx.server().process.kill(pid);
  }

  /** Write to a command's stdin. */
  async sendInput(pid: number, data: string): Promise<void> {
    await this.#ctx.server().process.sendStdin(pid, data);
  }

  /** @deprecated Use {@linkcode sendInput}. */
  async sendStdin(pid: number, data: string): Promise<void> {
    await this.sendInput(pid, data);
  }

  /**
   * Send SIGTERM (15, the default) or SIGKILL (9) to a command's process group. Any other
   * number raises `ValidationError` before a request is made.
   */
  async sendSignal(pid: number, signal: number = 15): Promise<void> {
    if (signal !== 15 && signal !== 9) {
      throw new ValidationError(`signal must be 15 (SIGTERM) or 9 (SIGKILL), got ${signal}`, {
        suggestion: "Use 15 to ask the command to stop, 9 to force it.",
      });
    }
    await this.#ctx.server().process.signal(pid, signal);
  }
}
