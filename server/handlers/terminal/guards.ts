/**
 * The terminal's shell and environment, through the guards every process the server starts
 * goes through: the command rules on `[shell, ...args]` (as for an `argv`), and the environment
 * store with the request's guarded `env` on top (the process group's `guardedEnvironment`).
 *
 * The shell is refused with the command codes of the contract (`command_not_allowed`,
 * `command_invalid`), since for a terminal the shell is the command the caller asked for.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { commandRules, decideArgv } from "../../guards/commands/index.ts";
import { locateProgram } from "../../process/locate_program.ts";
import type { ServerState } from "../../state.ts";
import { guardedEnvironment } from "../../process/start.ts";

/** The terminal type announced to programs unless the request's `env` says otherwise. */
const DEFAULT_TERM = "xterm-256color";

/**
 * The shell's whole environment: the store (never a credential), then the request's `env` after
 * the environment guard (`env_invalid`, `env_var_denied`, `env_var_not_allowed`), with
 * `TERM=xterm-256color` unless the request sets `TERM`.
 */
export function shellEnvironment(state: ServerState, raw: unknown): Record<string, string> {
  const env = guardedEnvironment(state, raw);
  const setsTerm = typeof raw === "object" && raw !== null && Object.hasOwn(raw, "TERM");
  if (!setsTerm) env.TERM = DEFAULT_TERM;
  return env;
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
  if (locateProgram(shell, cwd, env.PATH) === null) {
    throw new ApiError("command_invalid", `Shell ${shell} was not found or is not executable`, {
      param: "shell",
    });
  }
  return shell;
}
