/**
 * Parsing policy text: JSONC to a validated {@linkcode PolicyFile}, or an error that names the
 * file, line and column of everything wrong. A policy is all or nothing. Reading a file is
 * `read.ts`, which comes here only for text that is not plain, valid JSON (jsonc-parser is
 * CommonJS: loading it and Node's module layer costs the server's start ~40 ms of CPU).
 *
 * @module
 */

import { findNodeAtLocation, type Node, parseTree, printParseErrorCode } from "jsonc-parser";
import type { ParseError } from "jsonc-parser";
import type { PolicyFile } from "./schema.ts";
import { PolicyLoadError, validatePolicy } from "./problems.ts";

export { PolicyLoadError, type PolicyProblem, policyProblems } from "./problems.ts";

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
  const { problems, policy } = validatePolicy(value);
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
