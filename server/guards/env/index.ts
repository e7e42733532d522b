/**
 * The environment guard: what a caller may put in the environment of a process it starts (the
 * `env` map of `shell`, `shell_stream`, `process_start`, `run_code`, `pty_create`) or in the
 * environment store (`POST /system/env`).
 *
 * Order of refusals, first wins:
 * 1. `env_invalid` (400): the map is not an object of strings; a name is not
 *    `[A-Za-z_][A-Za-z0-9_]*` (so empty, `=`, NUL, spaces, `%`… are refused); a value has a NUL
 *    byte; more than {@linkcode MAX_ENV_ENTRIES} names.
 * 2. `env_var_denied` (403): the name is refused **by name**: it matches `env.deny` (default
 *    `LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, `DYLD_*`), or it is one the server never lets a
 *    caller set (its token variable `SVC_SERVER_TOKEN`, the identities' `token_env` variables, its
 *    own `SANDBAR_*` settings), or, while command rules are in force, a variable that changes
 *    which program a name runs or what bash runs on start ({@linkcode SHELL_CONTROL_VARIABLES}).
 *    A deny always wins over `env.allow`.
 * 3. `env_var_not_allowed` (403): `env.allow` is set and the name matches none of its entries.
 *
 * Entries of both lists are names or globs where `*` matches any run of characters.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { CompiledPolicy } from "../../policy/compile.ts";

/** Most names one map may carry. */
export const MAX_ENV_ENTRIES = 1024;

/**
 * Most bytes of one `NAME=value` (its NUL included): Linux's `MAX_ARG_STRLEN`. A longer one
 * makes every later `execve` fail with `E2BIG`, so it is refused where it comes in.
 */
export const MAX_ENV_VARIABLE_BYTES = 128 * 1024;

/**
 * Most bytes of a whole environment (every `NAME=value` and its NUL): half of the 2 MiB that
 * `execve` allows for arguments and environment together under the default 8 MiB stack, the
 * other half left for the command line.
 */
export const MAX_ENV_TOTAL_BYTES = 1024 * 1024;

const utf8 = new TextEncoder();

/**
 * The bytes an environment takes in `execve` (`NAME=value` and a NUL each).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { environmentBytes } from "./index.ts";
 * assert.equal(environmentBytes({ A: "1", B: "é" }), 4 + 5);
 * ```
 */
export function environmentBytes(env: Record<string, string | null>): number {
  let total = 0;
  for (const [name, value] of Object.entries(env)) {
    if (value !== null) total += name.length + 2 + utf8.encode(value).length;
  }
  return total;
}

/** A valid variable name. */
export const ENV_NAME: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Names a caller may never set: the server's own credentials and settings. */
export const SERVER_RESERVED_VARIABLES: readonly string[] = [
  "SVC_SERVER_TOKEN",
  "SANDBAR_*",
  // The agents group's upstream key: it stays in the server, whatever a caller asks.
  "OPENAI_API_KEY",
];

/**
 * Variables that decide which program a command name runs, or what bash runs before the command;
 * refused while `allow_commands` or `deny_commands` is set, since they would let a string that
 * passed the command guard run something else.
 */
export const SHELL_CONTROL_VARIABLES: readonly string[] = [
  "PATH",
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "IFS",
  "PROMPT_COMMAND",
  "PS4",
  "CDPATH",
  "GLOBIGNORE",
  "BASH_LOADABLES_PATH",
  "EXECIGNORE",
];

/**
 * Variables that make the dynamic loader (or glibc's `iconv`) map a library chosen by their
 * value: `LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT` and the rest of `LD_*`, and `GCONV_PATH`.
 * A command string may never assign one while command rules are in force, and under
 * `allow_commands` they are removed from every process's environment: an allowed program would
 * otherwise run code from a library of the caller's.
 */
export const LOADER_VARIABLES: readonly string[] = ["LD_*", "GCONV_PATH"];

const patternCache = new Map<string, RegExp>();

/**
 * Whether a variable name matches a list entry (a name, or a glob with `*`).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { nameMatches } from "./index.ts";
 * assert.equal(nameMatches("DYLD_INSERT_LIBRARIES", "DYLD_*"), true);
 * assert.equal(nameMatches("PATH", "DYLD_*"), false);
 * ```
 */
export function nameMatches(name: string, pattern: string): boolean {
  if (!pattern.includes("*")) return name === pattern;
  let re = patternCache.get(pattern);
  if (!re) {
    const body = pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
    re = new RegExp(`^${body}$`);
    patternCache.set(pattern, re);
  }
  return re.test(name);
}

/** What the environment guard reads from the policy. */
export interface EnvRules {
  /** `env.allow`: when set, only matching names may be set. */
  allow?: readonly string[];
  /** `env.deny` plus the server's reserved names. */
  deny: readonly string[];
}

/**
 * The env rules of a compiled policy: `env.allow`, `env.deny`, the server's reserved names and
 * the identities' token variables; the shell-control variables too while command rules are in
 * force.
 */
export function envRules(policy: CompiledPolicy): EnvRules {
  const deny = [...policy.env.deny, ...SERVER_RESERVED_VARIABLES];
  for (const identity of policy.source.identities ?? []) {
    if (identity.token_env) deny.push(identity.token_env);
  }
  const upstreamKey = policy.source.agents?.upstream?.api_key_env;
  if (upstreamKey) deny.push(upstreamKey);
  if (policy.allowCommands !== undefined || policy.denyCommands.length > 0) {
    deny.push(...SHELL_CONTROL_VARIABLES);
  }
  return { allow: policy.env.allow, deny };
}

/** The verdict on one name. */
export type EnvNameVerdict =
  | { allowed: true }
  | { allowed: false; code: "env_var_denied" | "env_var_not_allowed"; reason: string };

/**
 * Decide one name (already known to be valid).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { decideEnvName } from "./index.ts";
 * assert.equal(decideEnvName({ deny: ["LD_PRELOAD"] }, "LD_PRELOAD").allowed, false);
 * assert.equal(decideEnvName({ deny: ["LD_PRELOAD"] }, "DEBUG").allowed, true);
 * ```
 */
export function decideEnvName(rules: EnvRules, name: string): EnvNameVerdict {
  const denied = rules.deny.find((p) => nameMatches(name, p));
  if (denied !== undefined) {
    return {
      allowed: false,
      code: "env_var_denied",
      reason: `Environment variable ${name} is denied (matches ${denied})`,
    };
  }
  if (rules.allow && !rules.allow.some((p) => nameMatches(name, p))) {
    return {
      allowed: false,
      code: "env_var_not_allowed",
      reason: `Environment variable ${name} is not in env.allow`,
    };
  }
  return { allowed: true };
}

function invalid(message: string, param: string): ApiError {
  return new ApiError("env_invalid", message, { param });
}

/**
 * Check an `env` map from a request and return it typed. `undefined` gives `{}`. With
 * `allowNull`, a `null` value means "remove" (used by `POST /system/env`): its name must be
 * valid, but removing is always allowed.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { guardEnv } from "./index.ts";
 * assert.deepEqual(guardEnv({ deny: ["LD_PRELOAD"] }, { FOO: "1" }), { FOO: "1" });
 * assert.throws(() => guardEnv({ deny: ["LD_PRELOAD"] }, { LD_PRELOAD: "x.so" }), {
 *   code: "env_var_denied",
 * });
 * ```
 */
export function guardEnv(
  rules: EnvRules,
  raw: unknown,
  options: { param?: string; allowNull?: boolean } = {},
): Record<string, string | null> {
  const param = options.param ?? "env";
  if (raw === undefined) return {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw invalid("env must be an object of string values", param);
  }
  const entries = Object.entries(raw);
  if (entries.length > MAX_ENV_ENTRIES) {
    throw invalid(`env has more than ${MAX_ENV_ENTRIES} variables`, param);
  }
  // Built with fromEntries: a `__proto__` name stays an ordinary variable.
  const checked: [string, string | null][] = [];
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name)) {
      throw invalid(
        `Environment variable name ${JSON.stringify(name)} is not valid ([A-Za-z_][A-Za-z0-9_]*)`,
        param,
      );
    }
    if (value === null && options.allowNull) {
      checked.push([name, null]);
      continue;
    }
    if (typeof value !== "string") {
      throw invalid(`Environment variable ${name} must be a string`, param);
    }
    if (value.includes("\0")) throw invalid(`Environment variable ${name} has a NUL byte`, param);
    const bytes = environmentBytes({ [name]: value });
    if (bytes > MAX_ENV_VARIABLE_BYTES) {
      throw invalid(
        `Environment variable ${name} takes ${bytes} bytes; the kernel's limit for one ` +
          `NAME=value is ${MAX_ENV_VARIABLE_BYTES}`,
        param,
      );
    }
    checked.push([name, value]);
  }
  const total = environmentBytes(Object.fromEntries(checked));
  if (total > MAX_ENV_TOTAL_BYTES) {
    throw invalid(`env takes ${total} bytes; at most ${MAX_ENV_TOTAL_BYTES} are allowed`, param);
  }
  for (const [name, value] of checked) {
    if (value === null) continue;
    const verdict = decideEnvName(rules, name);
    if (!verdict.allowed) throw new ApiError(verdict.code, verdict.reason, { param });
  }
  return Object.fromEntries(checked);
}
