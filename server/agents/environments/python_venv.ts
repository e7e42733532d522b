/**
 * `packages.python` of an environment: Debian's Python refuses `pip install` outside a virtual
 * environment (PEP 668, "externally-managed-environment"), so the packages go into one of the
 * environment's own, `/workspace/.venv`, made with the system's Python (found on purpose, never
 * a shim first on someone's `PATH`: see `../../process/system_python.ts`). Its `bin` then comes
 * first on `PATH` (and `VIRTUAL_ENV` names it) for the environment's processes: the setup
 * commands after the packages, the shell tool and stdio MCP servers, so `python3` and `pip` are
 * the environment's.
 *
 * @module
 */

import { join } from "node:path";
import { confinements } from "../../confine/confinement.ts";
import { findSystemPython } from "../../process/system_python.ts";
import type { ServerState } from "../../state.ts";

/** The virtual environment's directory, relative to the workspace. */
export const PYTHON_VENV = ".venv";

let python: Promise<string | null> | undefined;

/**
 * The Python that makes the virtual environment: the system's, with `venv` and `ensurepip`
 * (Debian's `python3-venv`); `python3` when none is found, so the setup fails saying why.
 */
export async function venvPython(state: ServerState): Promise<string> {
  python ??= findSystemPython("import venv, ensurepip", confinements(state).system() ?? undefined);
  return (await python) ?? "python3";
}

/** The argv of the two steps of `packages.python`: make the venv, then pip into it. */
export function pythonPackageCommands(python: string, names: readonly string[]): string[][] {
  return [
    [python, "-m", "venv", PYTHON_VENV],
    [`${PYTHON_VENV}/bin/python`, "-m", "pip", "install", ...names],
  ];
}

/** Whether an environment's setup makes the venv (it has `packages.python`). */
export function usesVenv(steps: readonly { label: string }[]): boolean {
  return steps.some((s) => s.label === "packages.python");
}

/** The host path of an environment's virtual environment. */
export function venvDir(workspace: string): string {
  return join(workspace, PYTHON_VENV);
}

/**
 * `env` (already through the environment guard) with the virtual environment's `bin` first on
 * `PATH` and `VIRTUAL_ENV` set; `env` itself without a venv.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withVenv } from "./python_venv.ts";
 * const env = withVenv({ PATH: "/usr/bin:/bin" }, "/w/.venv");
 * assert.deepEqual(env, { PATH: "/w/.venv/bin:/usr/bin:/bin", VIRTUAL_ENV: "/w/.venv" });
 * assert.deepEqual(withVenv({ A: "1" }, null), { A: "1" });
 * ```
 */
export function withVenv(env: Record<string, string>, venv: string | null): Record<string, string> {
  if (!venv) return env;
  const path = env.PATH ? `${venv}/bin:${env.PATH}` : `${venv}/bin:/usr/local/bin:/usr/bin:/bin`;
  return { ...env, PATH: path, VIRTUAL_ENV: venv };
}

/**
 * What a login shell (`bash -lc`, the shell tool's) runs before the command: a login shell's
 * `/etc/profile` sets `PATH` again, so the venv is put first after it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loginShellPrelude } from "./python_venv.ts";
 * assert.equal(
 *   loginShellPrelude("/w/.venv"),
 *   "export PATH='/w/.venv/bin':\"$PATH\" VIRTUAL_ENV='/w/.venv'\n",
 * );
 * assert.equal(loginShellPrelude(null), "");
 * ```
 */
export function loginShellPrelude(venv: string | null): string {
  if (!venv) return "";
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  return `export PATH=${q(`${venv}/bin`)}:"$PATH" VIRTUAL_ENV=${q(venv)}\n`;
}
