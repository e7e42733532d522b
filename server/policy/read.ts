/**
 * Reading a policy file from disk. Plain JSON (what the SDK writes for a sandbox, and what most
 * files are) is parsed by `JSON.parse` and checked here; anything else (comments, trailing
 * commas, a syntax error, a duplicate key, a value the schema refuses) goes to the JSONC parser
 * in `load.ts`, which is loaded only then and reports every problem with its line and column.
 * Both ways give the same policy for the same file: the fast way only ever accepts, never
 * refuses.
 *
 * @module
 */

import type { PolicyFile } from "./schema.ts";
import { PolicyLoadError, validatePolicy } from "./problems.ts";

/**
 * Whether `text`, which `JSON.parse` accepted, has an object with the same key twice (JSON.parse
 * keeps the last one silently, and a reader of the file might believe the first). Only strings
 * and brackets matter in valid JSON: a string right after `{` or after a `,` inside an object is
 * a key.
 */
function hasDuplicateKey(text: string): boolean {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) { // "
      let j = i + 1;
      while (text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      const keys = stack[stack.length - 1];
      if (expectKey && keys) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (keys.has(key)) return true;
        keys.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b) { // {
      stack.push(new Set());
      expectKey = true;
    } else if (c === 0x5b) { // [
      stack.push(null);
    } else if (c === 0x7d || c === 0x5d) { // } ]
      stack.pop();
    } else if (c === 0x2c) { // ,
      expectKey = stack[stack.length - 1] !== null;
    }
  }
  return false;
}

/** The policy of plain, valid JSON `text` with nothing wrong, else undefined. */
function plainPolicy(text: string): PolicyFile | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  if (hasDuplicateKey(text)) return undefined;
  const { problems, policy } = validatePolicy(value);
  return problems.length === 0 ? policy : undefined;
}

/**
 * Read a policy file from disk. Throws {@linkcode PolicyLoadError} with file, line and column.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadPolicyFile } from "./read.ts";
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
  return plainPolicy(text) ?? (await import("./load.ts")).parsePolicy(text, file);
}
