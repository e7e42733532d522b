/**
 * Starting a process under policy, the one gate every caller passes: the HTTP handlers
 * (`shell`, `shell_stream`, `process_start`, terminals, `run_code`), the agents' `shell` tool,
 * stdio MCP servers and environment set-up scripts. A request goes through the command guard
 * (`cmd` or `argv`), the environment guard over the environment store (`env`) and the path guard
 * on the working directory (an existing directory); then it is spawned in the process table
 * (confined per identity) and, for a run to the end, its output kept to a bounded tail. Guard
 * refusals and spawn failures come out as the contract's {@linkcode ApiError}s.
 *
 * @module
 */

import { TailBuffer } from "../../shared/tail_buffer.ts";
import { ApiError } from "../errors.ts";
import { commandRules, guardArgv, guardShellCommand } from "../guards/commands/index.ts";
import { envRules, guardEnv } from "../guards/env/index.ts";
import { resolveGuardedPath } from "../guards/paths/resolve.ts";
import type { ServerState } from "../state.ts";
import { environmentStore } from "./environment.ts";
import type { ExitInfo, SpawnRequest } from "./process_group.ts";
import { type ProcessEntry, processTable } from "./table.ts";

/** The fields of a process start as a caller gives them; the guarded ones are unchecked. */
export interface ProcessStartFields {
  /** A shell command line (exactly one of `cmd` and `argv`). */
  cmd?: unknown;
  /** A program and its arguments. */
  argv?: unknown;
  /** The working directory (default the root). */
  cwd?: unknown;
  /** Variables on top of the environment store. */
  env?: unknown;
  /** Seconds before the process is killed. */
  timeout?: number;
}

/** The guarded working directory: `raw` (default the root), an existing directory. */
export async function guardCwd(state: ServerState, raw: unknown): Promise<string> {
  const g = resolveGuardedPath(state, raw ?? state.root, "read", "cwd");
  if (!g.exists) {
    throw new ApiError("invalid_path", `cwd ${g.path} does not exist`, { param: "cwd" });
  }
  // The guard's own lstat answers for a directory; only a link it kept needs another look.
  if (g.stat?.isDirectory) return g.path;
  const st = await Deno.stat(g.path).catch(() => null);
  if (!st?.isDirectory) {
    throw new ApiError("invalid_path", `cwd ${g.path} is not a directory`, { param: "cwd" });
  }
  return g.path;
}

/** The whole environment of a new process: the store with the guarded `env` map on top. */
export function guardedEnvironment(state: ServerState, raw: unknown): Record<string, string> {
  return environmentStore(state).forProcess(guardEnv(envRules(state.policy), raw));
}

/** The command of a body: exactly one of `cmd` (shell) and `argv` (exec), guarded. */
export function guardCommand(
  state: ServerState,
  body: { cmd?: unknown; argv?: unknown },
): { cmd?: string; argv?: string[] } {
  const rules = commandRules(state.policy);
  if (body.cmd !== undefined && body.argv !== undefined) {
    throw new ApiError("command_invalid", "Give cmd or argv, not both", { param: "cmd" });
  }
  if (body.argv !== undefined) return { argv: guardArgv(rules, body.argv) };
  if (body.cmd === undefined) {
    throw new ApiError("command_invalid", "cmd is required", { param: "cmd" });
  }
  return { cmd: guardShellCommand(rules, body.cmd) };
}

/**
 * A spawn request from a body, through every guard: command, then env, then cwd.
 */
export async function spawnRequest(
  state: ServerState,
  body: ProcessStartFields,
  defaultTimeout: number,
): Promise<SpawnRequest> {
  const command = guardCommand(state, body);
  const env = guardedEnvironment(state, body.env);
  const cwd = await guardCwd(state, body.cwd);
  return { ...command, cwd, env, timeoutMs: (body.timeout ?? defaultTimeout) * 1000 };
}

/** Turn a spawn failure into the contract's refusal. */
export function spawnFailure(e: unknown, request: SpawnRequest): ApiError {
  if (e instanceof ApiError) return e;
  const program = request.argv?.[0];
  if (program !== undefined && e instanceof Deno.errors.NotFound) {
    return new ApiError("process_invalid", `Program not found: ${program}`, { param: "argv" });
  }
  if (program !== undefined && e instanceof Deno.errors.PermissionDenied) {
    return new ApiError("process_invalid", `Program is not executable: ${program}`, {
      param: "argv",
    });
  }
  if (e instanceof Deno.errors.NotFound) {
    return new ApiError("invalid_path", `cwd ${request.cwd} does not exist`, { param: "cwd" });
  }
  return new ApiError("internal", `Could not start the process: ${(e as Error).message}`, {
    cause: e,
  });
}

/** Spawn a shell-kind entry, or throw the contract's refusal. */
export function spawnShell(
  state: ServerState,
  identity: string,
  request: SpawnRequest,
  onChunk: (type: "stdout" | "stderr", bytes: Uint8Array) => void,
): ProcessEntry {
  try {
    return processTable(state).spawn(request, { identity, kind: "shell", onChunk });
  } catch (e) {
    throw spawnFailure(e, request);
  }
}

/** The fields of a finished run, as the wire names them. */
export function exitFields(exit: ExitInfo) {
  return {
    exit_code: exit.exitCode,
    execution_time: exit.executionTime,
    timed_out: exit.timedOut,
    signal: exit.signal,
  };
}

/**
 * Run a request to the end, keeping the last `max` bytes of each stream; kills the group if
 * `signal` aborts first.
 */
export async function runToEnd(
  state: ServerState,
  identity: string,
  request: SpawnRequest,
  max: number,
  signal: AbortSignal,
) {
  const out = { stdout: new TailBuffer(max), stderr: new TailBuffer(max) };
  const entry = spawnShell(state, identity, request, (type, bytes) => out[type].push(bytes));
  const abort = () => entry.process.kill("SIGKILL");
  signal.addEventListener("abort", abort, { once: true });
  try {
    const exit = await entry.process.exited;
    return {
      pid: entry.process.pid,
      stdout: out.stdout.text(),
      stderr: out.stderr.text(),
      ...exitFields(exit),
      stdout_dropped: out.stdout.dropped,
      stderr_dropped: out.stderr.dropped,
    };
  } finally {
    signal.removeEventListener("abort", abort);
  }
}
