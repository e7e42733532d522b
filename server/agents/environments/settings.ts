/**
 * What an environment's settings must pass before anything is created: the variables of `env`
 * (never `PATH`, `CODEX_*`, `OPENAI_API_KEY`, nor what the environment guard refuses), the
 * setup and package commands (the command guard, the caller's `process:run` scope, and the
 * `shell` endpoint being on), and the features this server cannot honour, which are refused
 * rather than accepted and ignored.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { commandRules, guardArgv, guardShellCommand } from "../../guards/commands/index.ts";
import { envRules, guardEnv, nameMatches } from "../../guards/env/index.ts";
import type { Identity } from "../../policy/compile.ts";
import { missingScope } from "../../policy/scopes.ts";
import type { ServerState } from "../../state.ts";
import { invalid } from "../errors.ts";
import type { EnvironmentSettings } from "../schemas/environments.ts";
import { pythonPackageCommands } from "./python_venv.ts";

/** Variables an environment may never set, as the API refuses them. */
export const REFUSED_VARIABLES = ["PATH", "CODEX_*", "OPENAI_API_KEY"];

/** A package name: no option (`-…`), no shell syntax. */
const PACKAGE_NAME = /^[A-Za-z0-9@][A-Za-z0-9._+\-/=<>~^:@]*$/;

/**
 * The commands that install packages, by kind, before the names; `python` is two steps of its
 * own (`./python_venv.ts`).
 */
export const PACKAGE_COMMANDS = {
  system: ["apt-get", "install", "-y", "--no-install-recommends"],
  npm: ["npm", "install"],
} as const;

/** One command to run while setting an environment up. */
export interface SetupStep {
  /** What it is, for errors: `setup_commands[0]`, `packages.npm`. */
  label: string;
  /** Shell form, or argv. */
  cmd?: string;
  /** Exec form. */
  argv?: string[];
  /** A `/workspace/…` working directory, or undefined for the workspace itself. */
  cwd?: string;
}

/** Check the `env` map; returns it. */
export function checkEnv(
  state: ServerState,
  env: Record<string, string> | null | undefined,
  param: string,
): Record<string, string> {
  if (!env) return {};
  for (const name of Object.keys(env)) {
    if (REFUSED_VARIABLES.some((p) => nameMatches(name, p))) {
      throw new ApiError(
        "env_var_denied",
        `Environment variable ${name} cannot be set on an environment`,
        {
          param: `${param}.${name}`,
        },
      );
    }
  }
  const checked = guardEnv(envRules(state.policy), env, { param });
  return checked as Record<string, string>;
}

/** Refuse what this server cannot honour, naming the field. */
export function refuseUnsupported(settings: EnvironmentSettings, param: string): void {
  if (settings.network?.blocked_domains?.length) {
    throw invalid(
      `${param}.network.blocked_domains`,
      "blocked_domains cannot be enforced by this server: list what is allowed in allowed_domains with network.access 'restricted'.",
    );
  }
  if (settings.desktop?.enabled) {
    throw invalid(`${param}.desktop.enabled`, "This server has no desktop for environments.");
  }
  if (settings.plugins?.length) {
    throw invalid(`${param}.plugins`, "Plugins are not supported by this server.");
  }
  if (settings.skills?.length) {
    throw invalid(`${param}.skills`, "Skills are not supported by this server.");
  }
  if (settings.capability_directories?.length) {
    throw invalid(
      `${param}.capability_directories`,
      "capability_directories are not supported by this server.",
    );
  }
}

/**
 * The commands of a setup, in order: packages (system, python, npm), then setup_commands.
 * `python` is the Python that makes the environment's virtual environment.
 */
export function setupSteps(settings: EnvironmentSettings, python = "python3"): SetupStep[] {
  const steps: SetupStep[] = [];
  for (const kind of ["system", "python", "npm"] as const) {
    const names = settings.packages?.[kind];
    if (!names?.length) continue;
    for (const [i, name] of names.entries()) {
      if (!PACKAGE_NAME.test(name)) {
        throw invalid(`packages.${kind}[${i}]`, `Invalid package name '${name}'.`);
      }
    }
    const label = `packages.${kind}`;
    if (kind === "python") {
      for (const argv of pythonPackageCommands(python, names)) steps.push({ label, argv });
    } else steps.push({ label, argv: [...PACKAGE_COMMANDS[kind], ...names] });
  }
  for (const [i, s] of (settings.setup_commands ?? []).entries()) {
    steps.push({ label: `setup_commands[${i}]`, cmd: s.command, cwd: s.cwd ?? undefined });
  }
  return steps;
}

/**
 * Check that the caller may run these steps: `process:run`, the `shell` endpoint on, and each
 * command through the command guard.
 */
export function checkSteps(
  state: ServerState,
  identity: Identity,
  steps: SetupStep[],
  param: string,
): void {
  if (steps.length === 0) return;
  const missing = missingScope(identity.scopes, ["process:run"]);
  if (missing) {
    throw new ApiError(
      "missing_scope",
      `Running setup commands and packages needs the scope ${missing}`,
      {
        scope: missing,
        param: `${param}.${steps[0].label}`,
      },
    );
  }
  const shell = state.policy.endpoints.get("shell");
  if (!shell?.enabled) {
    throw new ApiError(
      "endpoint_disabled",
      "Setup commands run as the shell endpoint does, which this policy turns off",
      {
        param: `${param}.${steps[0].label}`,
        rule: shell?.rule ?? undefined,
        endpoint: "shell",
      },
    );
  }
  const python = steps.find((s) => s.label === "packages.python");
  if (python && (state.policy.allowCommands !== undefined || state.policy.denyCommands.length)) {
    throw invalid(
      `${param}.packages.python`,
      "packages.python puts the environment's virtual environment first on PATH, which this " +
        "policy's command rules forbid (a program of the workspace could take an allowed name); " +
        "make one in setup_commands and run its python by path.",
    );
  }
  const rules = commandRules(state.policy);
  for (const step of steps) {
    if (step.cmd !== undefined) {
      guardShellCommand(rules, step.cmd, `${param}.${step.label}.command`);
    } else guardArgv(rules, step.argv, `${param}.${step.label}`);
  }
}

/**
 * The `network` and `packages` of settings as an environment or a template answers them:
 * network access `enabled` and empty lists where the settings name none.
 */
export function answeredNetworkAndPackages(settings: EnvironmentSettings): {
  network: { access: string; allowed_domains: string[] };
  packages: { npm: string[]; python: string[]; system: string[] };
} {
  return {
    network: {
      access: settings.network?.access ?? "enabled",
      allowed_domains: settings.network?.allowed_domains ?? [],
    },
    packages: {
      npm: settings.packages?.npm ?? [],
      python: settings.packages?.python ?? [],
      system: settings.packages?.system ?? [],
    },
  };
}
