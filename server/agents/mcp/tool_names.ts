/**
 * The names MCP tools are offered to the model under. The model calls tools by one flat name,
 * limited to `^[A-Za-z0-9_-]{1,64}$`, and the agent's other tools (its function tools, the
 * shell and patch tools) share that space, so each MCP tool is named
 * `<server_label>__<tool>`:
 *
 * 1. every character of the label and of the tool's name outside `[A-Za-z0-9_-]` becomes `_`;
 * 2. a name longer than 64 characters keeps its first 55 and ends in `_` and 8 hex digits of a
 *    hash of the label and tool name as given (so two long names stay apart);
 * 3. a name already taken (by a reserved name or an earlier tool of the set) gets `_2`, `_3`, …
 *    (shortened to fit 64).
 *
 * The double underscore keeps them apart from the runtime's own tools; the agent's function
 * tools may still use it, which is why the runtime passes their names as reserved.
 *
 * @module
 */

/** Longest tool name the model's API accepts. */
export const MAX_TOOL_NAME = 64;

/** FNV-1a, 32 bits: a short, stable tag for a long name (not a secret). */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

const clean = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "_");

/**
 * The model-facing name of `tool` on `serverLabel`, before de-duplication.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpToolName } from "./tool_names.ts";
 * assert.equal(mcpToolName("github", "search_issues"), "github__search_issues");
 * assert.equal(mcpToolName("my docs", "files/read"), "my_docs__files_read");
 * assert.equal(mcpToolName("s", "x".repeat(100)).length, 64);
 * ```
 */
export function mcpToolName(serverLabel: string, tool: string): string {
  const name = `${clean(serverLabel)}__${clean(tool)}`;
  if (name.length <= MAX_TOOL_NAME) return name;
  return `${name.slice(0, MAX_TOOL_NAME - 9)}_${fnv1a(`${serverLabel}\0${tool}`)}`;
}

/**
 * Hands out unique names: {@linkcode mcpToolName}, with a numeric suffix when taken.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ToolNamer } from "./tool_names.ts";
 * const namer = new ToolNamer(["docs__read"]);
 * assert.equal(namer.name("docs", "read"), "docs__read_2");
 * assert.equal(namer.name("docs", "read?"), "docs__read_");
 * assert.equal(namer.name("docs", "read!"), "docs__read__2");
 * ```
 */
export class ToolNamer {
  readonly #taken: Set<string>;

  /** A namer for which `reserved` names are already taken. */
  constructor(reserved: Iterable<string> = []) {
    this.#taken = new Set(reserved);
  }

  /** A unique name for `tool` on `serverLabel`. */
  name(serverLabel: string, tool: string): string {
    const base = mcpToolName(serverLabel, tool);
    let name = base;
    for (let n = 2; this.#taken.has(name); n++) {
      const suffix = `_${n}`;
      name = `${base.slice(0, MAX_TOOL_NAME - suffix.length)}${suffix}`;
    }
    this.#taken.add(name);
    return name;
  }
}
