/**
 * Reading a policy file: JSONC text to a validated {@linkcode PolicyFile}, or an error that
 * names the file, line and column of everything wrong. A policy is all or nothing.
 *
 * @module
 */

import { findNodeAtLocation, type Node, parseTree, printParseErrorCode } from "jsonc-parser";
import type { ParseError } from "jsonc-parser";
import { type EndpointGroup, ENDPOINTS_BY_ID, GROUPS } from "../endpoints.ts";
import { type PolicyFile, policySchema } from "./schema.ts";

/**
 * A policy that cannot be used, with where in the file the problem is.
 *
 * @example Errors name the file, line and column
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy, PolicyLoadError } from "./load.ts";
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

function position(text: string, offset: number): [line: number, column: number] {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return [line, offset - lineStart + 1];
}

/** The node of a property's key (for unknown keys) or of a value, by path. */
function locate(root: Node | undefined, path: (string | number)[], key?: string): number {
  if (!root) return 0;
  const parent = findNodeAtLocation(root, path) ?? root;
  if (key !== undefined && parent.type === "object") {
    const prop = parent.children?.find((p) => p.children?.[0]?.value === key);
    if (prop) return prop.offset;
  }
  return parent.offset;
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
 * import { policyProblems } from "./load.ts";
 * const problems = policyProblems({ audit: "sometimes", colour: "red" });
 * assert.deepEqual(problems.map((p) => p.message.split(":")[0]), [
 *   "audit",
 *   'unknown key "colour"',
 * ]);
 * ```
 */
export function policyProblems(value: unknown): PolicyProblem[] {
  return validated(value).problems;
}

function validated(value: unknown): { problems: PolicyProblem[]; policy?: PolicyFile } {
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

/**
 * Parse and validate policy text. Throws {@linkcode PolicyLoadError} naming every problem, each
 * on its own line with its own position; the error's `line` and `column` are the first one's.
 *
 * @example Comments and trailing commas are allowed
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "./load.ts";
 * const policy = parsePolicy('{ "preset": "readonly", /* a comment *\/ }', "p.jsonc");
 * assert.equal(policy.preset, "readonly");
 * ```
 *
 * @example Every mistake in one error
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "./load.ts";
 * const text = '{\n  "audit": "sometimes",\n  "colour": 1,\n  "preset": "lax"\n}';
 * assert.throws(() => parsePolicy(text, "p.jsonc"), (e: Error) => {
 *   assert.equal(e.message.split("\n").length, 3);
 *   assert.match(e.message, /^p\.jsonc:3:3: unknown key "colour"/m);
 *   assert.match(e.message, /^p\.jsonc:2:12: audit: /m);
 *   assert.match(e.message, /^p\.jsonc:4:13: preset: /m);
 *   return true;
 * });
 * ```
 */
export function parsePolicy(text: string, file: string): PolicyFile {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const located: { offset: number; message: string }[] = [];
  const fail = (): never => {
    const lines = located.map(({ offset, message }) => {
      const [line, column] = position(text, offset);
      return { line, column, message };
    });
    const [first, ...rest] = lines;
    throw new PolicyLoadError(
      file,
      first.line,
      first.column,
      first.message,
      rest.map((l) => `${file}:${l.line}:${l.column}: ${l.message}`),
    );
  };
  if (errors.length > 0) {
    for (const e of errors) {
      located.push({ offset: e.offset, message: `JSONC ${printParseErrorCode(e.error)}` });
    }
    fail();
  }
  if (!root || root.type !== "object") {
    located.push({ offset: 0, message: "the policy must be a JSON object" });
    fail();
  }
  const value = nodeValue(root!, (offset, key) => {
    located.push({ offset, message: `duplicate key "${key}"` });
  });
  const { problems, policy } = validated(value);
  for (const problem of problems) {
    located.push({ offset: locate(root, problem.path, problem.key), message: problem.message });
  }
  if (located.length > 0) {
    located.sort((a, b) => a.offset - b.offset);
    fail();
  }
  return policy!;
}

/**
 * jsonc-parser's getNodeValue, written out so that a duplicate key is refused: JSON.parse would
 * silently keep the last one, and a reader of the file might believe the first.
 */
function nodeValue(node: Node, duplicate: (offset: number, key: string) => void): unknown {
  switch (node.type) {
    case "object": {
      const out: Record<string, unknown> = Object.create(null);
      for (const prop of node.children ?? []) {
        const [k, v] = prop.children ?? [];
        if (!k || !v) continue;
        if (Object.hasOwn(out, k.value)) duplicate(k.offset, k.value);
        out[k.value as string] = nodeValue(v, duplicate);
      }
      return { ...out };
    }
    case "array":
      return (node.children ?? []).map((n) => nodeValue(n, duplicate));
    default:
      return node.value;
  }
}

/**
 * Read a policy file from disk. Throws {@linkcode PolicyLoadError} with file, line and column.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadPolicyFile } from "./load.ts";
 * const file = await Deno.makeTempFile({ suffix: ".jsonc" });
 * await Deno.writeTextFile(file, '{ "preset": "readonly" }');
 * assert.equal((await loadPolicyFile(file)).preset, "readonly");
 * await Deno.remove(file);
 * await assert.rejects(loadPolicyFile(file), /cannot read/);
 * ```
 */
export async function loadPolicyFile(file: string): Promise<PolicyFile> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new PolicyLoadError(file, 1, 1, `cannot read: ${(e as Error).message}`);
  }
  return parsePolicy(text, file);
}
