/**
 * The upload extension guard: `upload.allow_extensions` and `upload.deny_extensions`, refused
 * with 403 `extension_not_allowed`.
 *
 * A name's extensions are every suffix that starts at a dot (`a.tar.gz` has `.gz` and `.tar.gz`),
 * lower-cased, after trailing dots and spaces are dropped: `run.SH. ` is checked as `.sh`, since
 * some tools and file systems drop them too. A name is refused when any suffix is denied, or,
 * with an allow list, when no suffix is allowed (so a name without an extension is refused).
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

/** The upload extension rules, as compiled (lower case, with the dot). */
export interface ExtensionRules {
  /** Extensions accepted; undefined accepts any not denied. */
  allow?: readonly string[];
  /** Extensions refused. */
  deny: readonly string[];
}

/**
 * The extensions of a file name, longest first.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { extensionsOf } from "./extensions.ts";
 * assert.deepEqual(extensionsOf("Backup.TAR.gz"), [".tar.gz", ".gz"]);
 * ```
 */
export function extensionsOf(name: string): string[] {
  const base = name.replace(/[. ]+$/u, "").toLowerCase();
  const out: string[] = [];
  for (let i = base.indexOf(".", 1); i > 0; i = base.indexOf(".", i + 1)) out.push(base.slice(i));
  return out;
}

/**
 * Throw `extension_not_allowed` when a file name breaks the rules.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertExtensionAllowed } from "./extensions.ts";
 * assertExtensionAllowed({ deny: [".exe"] }, "notes.txt"); // passes
 * assert.throws(() => assertExtensionAllowed({ deny: [".exe"] }, "setup.EXE"), {
 *   code: "extension_not_allowed",
 * });
 * ```
 */
export function assertExtensionAllowed(rules: ExtensionRules, name: string, param = "path"): void {
  const exts = extensionsOf(name);
  const denied = exts.find((e) => rules.deny.includes(e));
  if (denied !== undefined) {
    throw new ApiError("extension_not_allowed", `Files ending in ${denied} may not be uploaded`, {
      param,
    });
  }
  if (rules.allow && !exts.some((e) => rules.allow!.includes(e))) {
    throw new ApiError(
      "extension_not_allowed",
      `${name} has no allowed extension (allowed: ${rules.allow.join(", ") || "none"})`,
      { param },
    );
  }
}
