/**
 * The server's own files (its data directory with the store key and `agents.sqlite`, its private
 * state directory, the audit log, the policy file): never reached by a file operation on a path
 * a sandboxed process controls, whatever `paths.symlinks` says and even though the server's own
 * Deno permissions let it read and write them. The path guard refuses these trees by name; this
 * list is what the descriptor-based code checks an opened directory or file against, by where the
 * kernel says it really is (`/proc/self/fd/N`), so a link swapped in after the guard looked
 * cannot lead there either.
 *
 * Process-wide on purpose: the files are the process's, whichever server in it holds them.
 * Entries are kept as real paths (a link in the operator's path to them is resolved once).
 *
 * @module
 */

const trees = new Set<string>();

/** Whether `path` is `tree` or inside it. */
function within(path: string, tree: string): boolean {
  return tree === "/" || path === tree || path.startsWith(`${tree}/`);
}

/**
 * Add the server's own files or directories (absolute paths) to the withheld set.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { withheldTreeOf, withholdPaths } from "./withheld.ts";
 * withholdPaths(["/nonexistent/sandbar-data"]);
 * assert.equal(withheldTreeOf("/nonexistent/sandbar-data/store.key"), "/nonexistent/sandbar-data");
 * assert.equal(withheldTreeOf("/nonexistent/sandbar-data-2"), undefined);
 * ```
 */
export function withholdPaths(paths: readonly string[]): void {
  for (const path of paths) {
    trees.add(path);
    try {
      trees.add(Deno.realPathSync(path));
    } catch { /* not there yet: kept as written */ }
  }
}

/** The withheld tree holding the real path `path`, if any. */
export function withheldTreeOf(path: string): string | undefined {
  for (const tree of trees) if (within(path, tree)) return tree;
  return undefined;
}
