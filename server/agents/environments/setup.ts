/**
 * Setting an environment up after it was accepted: its files are already in the workspace;
 * here the package installs and `setup_commands` run in order through the server's process
 * layer (the process table, like `POST /process/shell`), in the workspace, with the
 * environment's `env`, and without a network when `network.access` is `disabled`. The first
 * command that does not exit 0 makes the environment `failed`, with its output in `error`.
 * With `packages.python`, the environment's virtual environment is first on `PATH` of every step.
 *
 * @module
 */

import { guardCwd, guardedEnvironment, runToEnd } from "../../process/start.ts";
import { shell } from "../../process/process_group.ts";
import type { ServerState } from "../../state.ts";
import { hostPath } from "./workspace.ts";
import type { SetupStep } from "./settings.ts";
import { withVenv } from "./python_venv.ts";

/** How long one step may run. */
export const SETUP_STEP_TIMEOUT_MS = 30 * 60 * 1000;

/** How much of a failed step's output the error carries. */
const ERROR_OUTPUT_BYTES = 4096;

/** How a setup ended. */
export type SetupOutcome = { ok: true } | { ok: false; code: string; message: string };

/** Run the steps; stops at the first failure. */
export async function runSetup(
  state: ServerState,
  identity: string,
  workspace: string,
  steps: SetupStep[],
  env: Record<string, string>,
  prefix: string[],
  signal: AbortSignal,
  venv: string | null = null,
): Promise<SetupOutcome> {
  for (const step of steps) {
    if (signal.aborted) return { ok: false, code: "cancelled", message: "setup was stopped" };
    let cwd: string;
    try {
      cwd = await guardCwd(state, step.cwd ? hostPath(workspace, step.cwd) : workspace);
    } catch (e) {
      return { ok: false, code: "invalid_path", message: `${step.label}: ${(e as Error).message}` };
    }
    const inner = step.argv ?? [shell(), "-c", step.cmd!];
    const argv = prefix.length > 0 ? [...prefix, ...inner] : undefined;
    const request = {
      ...(argv ? { argv } : step.argv ? { argv: step.argv } : { cmd: step.cmd }),
      cwd,
      env: withVenv(guardedEnvironment(state, env), venv),
      timeoutMs: SETUP_STEP_TIMEOUT_MS,
    };
    let result;
    try {
      result = await runToEnd(state, identity, request, 64 * 1024, signal);
    } catch (e) {
      return {
        ok: false,
        code: "sandbox_error",
        message: `${step.label}: ${(e as Error).message}`,
      };
    }
    if (result.exit_code !== 0) {
      const output = `${result.stdout}${result.stderr}`.slice(-ERROR_OUTPUT_BYTES);
      const what = step.cmd !== undefined ? `\`${step.cmd}\`` : step.argv!.join(" ");
      return {
        ok: false,
        code: result.timed_out ? "request_timeout" : "setup_command_failed",
        message: `${step.label} (${what}) exited with ${result.exit_code}: ${output}`,
      };
    }
  }
  return { ok: true };
}
