/**
 * The body schemas of the process group, and turning a body into a {@linkcode SpawnRequest} through every guard a process start passes: the command rules on
 * `cmd` or `argv`, the path guard on `cwd` (an existing directory), and the environment guard
 * on `env`, over the environment store.
 *
 * @module
 */

import { z } from "zod";
import { ApiError } from "../../errors.ts";
import { commandRules, guardArgv, guardShellCommand } from "../../guards/commands/index.ts";
import { envRules, guardEnv } from "../../guards/env/index.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { environmentStore } from "../../process/environment.ts";
import type { SpawnRequest } from "../../process/spawn.ts";
import type { ServerState } from "../../state.ts";

const MiB = 1024 * 1024;

/** Fields every process start takes; the guarded ones are checked by their guards, not zod. */
const common = {
  cmd: z.unknown().optional(),
  argv: z.unknown().optional(),
  cwd: z.unknown().optional(),
  env: z.unknown().optional(),
  timeout: z.number().min(0).max(86400).optional(),
};

/** Body of `shell` and `shell_stream`. */
export const ShellBody = z.strictObject({
  ...common,
  stdin: z.string().optional(),
  max_output_bytes: z.number().int().min(1).max(64 * MiB).optional(),
});

/** Body of `process_start`. */
export const StartBody = z.strictObject({
  ...common,
  stdin: z.boolean().optional(),
  buffer_bytes: z.number().int().min(1024).max(64 * MiB).optional(),
  tag: z.string().max(128).optional(),
});

/** Default per-stream limit of `shell` output. */
export const DEFAULT_MAX_OUTPUT = 16 * MiB;

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
  body: z.output<typeof ShellBody> | z.output<typeof StartBody>,
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
