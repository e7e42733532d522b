/**
 * The terminal's shell and environment, through the guards every process the server starts
 * goes through: the command rules on `[shell, ...args]` (as for an `argv`), and the environment
 * store with the request's guarded `env` on top.
 *
 * The shell is refused with the command codes of the contract (`command_not_allowed`,
 * `command_invalid`), since for a terminal the shell is the command the caller asked for.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { ApiError } from "../../errors.ts";
import { commandRules, decideArgv } from "../../guards/commands/index.ts";
import { envRules, guardEnv } from "../../guards/env/index.ts";
import { environmentStore } from "../../process/environment.ts";
import type { ServerState } from "../../state.ts";

/** The terminal type announced to programs unless the request's `env` says otherwise. */
const DEFAULT_TERM = "xterm-256color";

/**
 * The shell's whole environment: the store (never a credential), `TERM`, then the request's
 * `env` after the environment guard (`env_invalid`, `env_var_denied`, `env_var_not_allowed`).
 */
export function shellEnvironment(state: ServerState, raw: unknown): Record<string, string> {
  const requested = guardEnv(envRules(state.policy), raw);
  return environmentStore(state).forProcess({ TERM: DEFAULT_TERM, ...requested });
}

function isExecutableFile(path: string): boolean {
  try {
    const st = Deno.statSync(path);
    return st.isFile && st.mode !== null && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** The program as it will be run: a path as given (relative to `cwd`), or a name on `PATH`. */
function locate(program: string, cwd: string, path: string | undefined): string | undefined {
  if (program.includes("/")) return isExecutableFile(resolve(cwd, program)) ? program : undefined;
  for (const dir of (path ?? "").split(":")) {
    if (dir !== "" && isExecutableFile(join(dir, program))) return program;
  }
  return undefined;
}

/**
 * Check the shell and its arguments against the command rules, and that the shell exists on the
 * shell's own `PATH`; returns the shell as given.
 */
export function guardShell(
  state: ServerState,
  shell: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
): string {
  const verdict = decideArgv(commandRules(state.policy), [shell, ...args]);
  if (!verdict.allowed) {
    const code = verdict.code === "process_denied" || verdict.code === "command_not_allowed"
      ? "command_not_allowed"
      : "command_invalid";
    throw new ApiError(code, verdict.reason.replace(/^Program refused/, "Shell refused"), {
      param: "shell",
    });
  }
  if (locate(shell, cwd, env.PATH) === undefined) {
    throw new ApiError("command_invalid", `Shell ${shell} was not found or is not executable`, {
      param: "shell",
    });
  }
  return shell;
}
