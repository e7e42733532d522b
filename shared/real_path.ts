/**
 * A path with its links resolved, where that can be done.
 *
 * @module
 */

/**
 * `path` with every symbolic link in it resolved, or `path` itself when it cannot be (it does not
 * exist, or a directory on the way cannot be read): for comparing or naming paths that may be
 * reached through a link, where a missing one is not an error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { realPathOr } from "./real_path.ts";
 * const dir = Deno.realPathSync(await Deno.makeTempDir());
 * await Deno.symlink(dir, `${dir}-link`);
 * assert.equal(realPathOr(`${dir}-link`), dir);
 * assert.equal(realPathOr(`${dir}/missing`), `${dir}/missing`);
 * await Deno.remove(`${dir}-link`);
 * await Deno.remove(dir);
 * ```
 */
export function realPathOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}
