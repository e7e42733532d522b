/**
 * Reading a policy file: JSONC text to a validated {@linkcode PolicyFile}, or an error that
 * names the file, line and column of the first thing wrong. A policy is all or nothing.
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

  /** Make the error; the message is prefixed with `file:line:column`. */
  constructor(file: string, line: number, column: number, message: string) {
    super(`${file}:${line}:${column}: ${message}`);
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

/**
 * Parse and validate policy text. Throws {@linkcode PolicyLoadError} on the first problem.
 *
 * @example Comments and trailing commas are allowed
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "./load.ts";
 * const policy = parsePolicy('{ "preset": "readonly", /* a comment *\/ }', "p.jsonc");
 * assert.equal(policy.preset, "readonly");
 * ```
 */
export function parsePolicy(text: string, file: string): PolicyFile {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const [line, column] = position(text, errors[0].offset);
    throw new PolicyLoadError(file, line, column, `JSONC ${printParseErrorCode(errors[0].error)}`);
  }
  if (!root || root.type !== "object") {
    throw new PolicyLoadError(file, 1, 1, "the policy must be a JSON object");
  }
  const value = nodeValue(root, (offset, key) => {
    const [line, column] = position(text, offset);
    throw new PolicyLoadError(file, line, column, `duplicate key "${key}"`);
  });
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
    let offset: number;
    let message = issue.message;
    if (issue.code === "unrecognized_keys") {
      offset = locate(root, path, issue.keys[0]);
      message = `unknown key "${issue.keys[0]}"${path.length ? ` in ${path.join(".")}` : ""}`;
    } else {
      offset = locate(root, path);
      message = `${path.join(".") || "(root)"}: ${issue.message}`;
    }
    const [line, column] = position(text, offset);
    throw new PolicyLoadError(file, line, column, message);
  }
  const policy = parsed.data as PolicyFile;
  for (const key of Object.keys(policy.endpoints ?? {})) {
    if (!ENDPOINTS_BY_ID.has(key) && !GROUPS.has(key as EndpointGroup)) {
      const [line, column] = position(text, locate(root, ["endpoints"], key));
      throw new PolicyLoadError(
        file,
        line,
        column,
        `unknown endpoint id or group "${key}" in endpoints`,
      );
    }
  }
  return policy;
}

/**
 * jsonc-parser's getNodeValue, written out so that a duplicate key is refused: JSON.parse would
 * silently keep the last one, and a reader of the file might believe the first.
 */
function nodeValue(node: Node, duplicate: (offset: number, key: string) => never): unknown {
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
