/**
 * What a recursive delete or a move of a whole directory would touch: the guard on the top path
 * is not enough when a `paths.read_only` tree or a `paths.deny` match lies below it. Links inside
 * are never followed (removing a link does not touch its target).
 *
 * @module
 */

import { join } from "node:path";
import { ApiError } from "../../errors.ts";
import type { PathSettings } from "../../policy/compile.ts";
import { deniedBy, isWithin } from "./index.ts";

/**
 * Throw `read_only` or `path_denied` when removing the directory `real` (asked for as
 * `requested`) would remove a protected path below it.
 */
export async function assertTreeRemovable(
  settings: PathSettings,
  requested: string,
  real: string,
  param = "path",
): Promise<void> {
  for (const tree of settings.readOnly) {
    if (isWithin(tree, requested) || isWithin(tree, real)) {
      throw new ApiError("read_only", `${requested} holds the read-only tree ${tree}`, { param });
    }
  }
  if (settings.deny.length === 0) return;
  const stack: string[] = [""];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    for await (const entry of Deno.readDir(join(real, rel))) {
      const sub = rel === "" ? entry.name : `${rel}/${entry.name}`;
      const pattern = deniedBy(join(requested, sub), settings.deny) ??
        deniedBy(join(real, sub), settings.deny);
      if (pattern !== undefined) {
        throw new ApiError("path_denied", `${requested} holds a denied path (${pattern})`, {
          param,
        });
      }
      if (entry.isDirectory && !entry.isSymlink) stack.push(sub);
    }
  }
}
