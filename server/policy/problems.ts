/**
 * What can be wrong with a policy: the error a policy file that cannot be used raises (with the
 * file, line and column), and the check of a policy value against the schema and the endpoint
 * table, all problems at once.
 *
 * @module
 */

import { type EndpointGroup, ENDPOINTS_BY_ID, GROUPS } from "../endpoints.ts";
import { type PolicyFile, policySchema } from "./schema.ts";

/**
 * A policy that cannot be used, with where in the file the problem is.
 *
 * @example Errors name the file, line and column
 * ```ts
 * import assert from "node:assert/strict";
 * import { PolicyLoadError } from "./problems.ts";
 * import { parsePolicy } from "./load.ts";
 * assert.throws(() => parsePolicy('{ "audit": "sometimes" }', "policy.jsonc"), (e) => {
 *   assert.ok(e instanceof PolicyLoadError);
 *   assert.match(e.message, /^policy\.jsonc:1:12: /);
 *   return true;
 * });
 * ```
 */
export class PolicyLoadError extends Error {
  /** The file name as given. */
  readonly file: string;
  /** 1-based line. */
  readonly line: number;
  /** 1-based column. */
  readonly column: number;

  /**
   * Make the error; the message is prefixed with `file:line:column`, and `more` (further
   * problems, each already prefixed with its own position) follow it line by line.
   */
  constructor(file: string, line: number, column: number, message: string, more: string[] = []) {
    super([`${file}:${line}:${column}: ${message}`, ...more].join("\n"));
    this.name = "PolicyLoadError";
    this.file = file;
    this.line = line;
    this.column = column;
  }
}

/** One thing wrong with a policy: where (a path of keys) and what. */
export interface PolicyProblem {
  /** Keys from the root to the value at fault (for an unknown key, to the object holding it). */
  path: (string | number)[];
  /** The unknown key, when the problem is one. */
  key?: string;
  /** What is wrong, with the path in front (`paths.symlinks: ...`, `unknown key "x" in paths`). */
  message: string;
}

/**
 * Everything wrong with a policy value, all at once (empty when it is valid): a file with four
 * mistakes should take one run to fix, not four.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { policyProblems } from "./problems.ts";
 * const problems = policyProblems({ audit: "sometimes", colour: "red" });
 * assert.deepEqual(problems.map((p) => p.message.split(":")[0]), [
 *   "audit",
 *   'unknown key "colour"',
 * ]);
 * ```
 */
export function policyProblems(value: unknown): PolicyProblem[] {
  return validatePolicy(value).problems;
}

/**
 * The policy in `value` and everything wrong with it (`policy` only when nothing is).
 */
export function validatePolicy(value: unknown): { problems: PolicyProblem[]; policy?: PolicyFile } {
  const problems: PolicyProblem[] = [];
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          const where = path.length ? ` in ${path.join(".")}` : "";
          problems.push({ path, key, message: `unknown key "${key}"${where}` });
        }
      } else {
        problems.push({ path, message: `${path.join(".") || "(root)"}: ${issue.message}` });
      }
    }
  }
  const endpoints = (value as { endpoints?: unknown } | null)?.endpoints;
  if (endpoints && typeof endpoints === "object") {
    for (const key of Object.keys(endpoints)) {
      if (!ENDPOINTS_BY_ID.has(key) && !GROUPS.has(key as EndpointGroup)) {
        problems.push({
          path: ["endpoints"],
          key,
          message: `unknown endpoint id or group "${key}" in endpoints`,
        });
      }
    }
  }
  return { problems, policy: parsed.success ? parsed.data as PolicyFile : undefined };
}
