/**
 * Checks every options object of the SDK goes through: an option that is not known is refused
 * (never silently ignored) with the nearest known name, and a timeout in seconds that looks
 * like milliseconds is refused with that said.
 *
 * Why refuse rather than ignore: users coming from E2B write `timeoutMs` or `envs` out of
 * habit; ignored, the sandbox would live 300 s instead of what they asked, or a command would
 * run without its environment, and nothing would say why.
 *
 * @module
 */

import { nearestName } from "../../shared/nearest_name.ts";
import { ValidationError } from "./classes.ts";

/** Names another SDK spells differently, mapped to ours (with the unit change where there is one). */
const RENAMED: Readonly<Record<string, string>> = {
  timeoutMs: "timeout",
  requestTimeoutMs: "requestTimeout",
  envs: "env",
  env: "envs",
  content: "data",
  onStdOut: "onStdout",
  onStdErr: "onStderr",
};

/**
 * The known name nearest to `name`: a known rename first, else the shared nearest name (close
 * typos only), else null.
 */
export function nearestOption(name: string, known: readonly string[]): string | null {
  const renamed = RENAMED[name];
  if (renamed !== undefined && known.includes(renamed)) return renamed;
  return nearestName(name, known) ?? null;
}

/**
 * Throw a `ValidationError` for the first key of `options` not in `known`, naming it and the
 * nearest known one. `where` names the call (`Sandbox.create`, `commands.run`, …).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkOptions } from "./option_checks.ts";
 *
 * assert.throws(
 *   () => checkOptions("Sandbox.create", { timeoutMs: 60_000 }, ["timeout", "metadata"]),
 *   /Sandbox.create: unknown option 'timeoutMs'; did you mean 'timeout' \(in seconds\)/,
 * );
 * checkOptions("Sandbox.create", { timeout: 60 }, ["timeout", "metadata"]); // known: no error
 * ```
 */
export function checkOptions(where: string, options: unknown, known: readonly string[]): void {
  if (options === undefined || options === null) return;
  if (typeof options !== "object" || Array.isArray(options)) {
    throw new ValidationError(`${where}: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = nearestOption(key, known);
    const unit = near !== null && /Ms$/.test(key) && !/Ms$/.test(near) ? " (in seconds)" : "";
    throw new ValidationError(
      known.length === 0
        ? `${where}: unknown option '${key}'; it takes no options`
        : near === null
        ? `${where}: unknown option '${key}'; known options: ${known.join(", ")}`
        : `${where}: unknown option '${key}'; did you mean '${near}'${unit}?`,
      {
        suggestion: known.length === 0
          ? "Leave the options out."
          : `Known options: ${known.join(", ")}.` +
            (unit ? " Every timeout of this SDK is in seconds." : ""),
      },
    );
  }
}

function describe(value: unknown): string {
  return Array.isArray(value) ? "an array" : value === null ? "null" : typeof value;
}

/** The longest timeout in seconds that is plausible: one day. */
export const MAX_TIMEOUT_SECONDS = 86_400;

/**
 * A timeout in seconds (`0` allowed when `zero` says what it means), refusing a value over a
 * day as probably milliseconds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { timeoutSeconds } from "./option_checks.ts";
 *
 * assert.equal(timeoutSeconds("timeout", 30), 30);
 * assert.throws(() => timeoutSeconds("timeout", 120_000), /120000 looks like milliseconds/);
 * ```
 */
export function timeoutSeconds(name: string, value: unknown, zero?: string): number {
  if (typeof value !== "number" || Number.isNaN(value) || value < 0 || (value === 0 && !zero)) {
    throw new ValidationError(
      `${name} must be a number of seconds ${zero ? ">= 0" : "> 0"}, got ${String(value)}`,
    );
  }
  if (value > MAX_TIMEOUT_SECONDS) {
    throw new ValidationError(
      `${name} is in seconds and at most ${MAX_TIMEOUT_SECONDS} (one day); ${value} looks like ` +
        `milliseconds`,
      { suggestion: `Pass seconds: ${name}: ${value / 1000} for ${value} ms.` },
    );
  }
  return value;
}
