/**
 * The lexical path guard: what the policy says of a path before the file system is touched.
 * Order of refusals: `invalid_path` (missing, not a string, NUL byte, over `limits.path_max`),
 * `path_not_allowed` (outside every `paths.allow` tree), `path_denied` (the path or one of its
 * parents matches a `paths.deny` glob), `read_only` (a write or delete inside a
 * `paths.read_only` tree).
 *
 * Relative paths resolve against the server's root; `..` is resolved lexically before any
 * check, so `/workspace/../etc` is `/etc`. Percent signs are not decoded: a path is a file name,
 * not a URL. This module never reads the disk, so `POST /capabilities/check` built on it answers
 * the same whether or not the path exists. The link-aware checks live beside it.
 *
 * @module
 */

import { resolve } from "node:path";
import { ApiError, type ErrorCode } from "../../errors.ts";
import type { PathSettings } from "../../policy/compile.ts";

/** What a caller wants to do with a path. */
export type PathOperation = "read" | "write" | "delete";

/** The answer for one path. */
export interface PathDecision {
  /** Whether the operation would be allowed. */
  allowed: boolean;
  /** The absolute, normalized path, when the input was a usable path. */
  path: string | null;
  /** The refusal code, when refused. */
  code: ErrorCode | null;
  /** Why, in words. */
  reason: string;
}

const globCache = new Map<string, RegExp>();

/**
 * A `paths.deny` glob as a regular expression over absolute paths: `**` any depth, `*` and `?`
 * within one component; a pattern that does not start with `/` matches at any depth.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { globToRegExp } from "./index.ts";
 * assert.equal(globToRegExp("**\/.env").test("/workspace/app/.env"), true);
 * assert.equal(globToRegExp("**\/.env").test("/workspace/app/.env.example"), false);
 * ```
 */
export function globToRegExp(glob: string): RegExp {
  let re = globCache.get(glob);
  if (re) return re;
  const anchored = glob.startsWith("/") ? glob : `**/${glob}`;
  let out = "";
  for (let i = 0; i < anchored.length; i++) {
    const ch = anchored[i];
    if (ch === "*" && anchored[i + 1] === "*") {
      if (anchored[i + 2] === "/") {
        out += "(?:.*/)?";
        i += 2;
      } else {
        out += ".*";
        i += 1;
      }
    } else if (ch === "*") out += "[^/]*";
    else if (ch === "?") out += "[^/]";
    else out += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  re = new RegExp(`^${out}$`, "u");
  globCache.set(glob, re);
  return re;
}

/** Whether `path` is `tree` or inside it. */
export function isWithin(path: string, tree: string): boolean {
  if (tree === "/") return true;
  return path === tree || path.startsWith(tree.endsWith("/") ? tree : `${tree}/`);
}

/**
 * The `paths.deny` pattern that refuses an absolute path (or one of its parents), if any.
 *
 * @example A denied directory denies what is below it
 * ```ts
 * import assert from "node:assert/strict";
 * import { deniedBy } from "./index.ts";
 * assert.equal(deniedBy("/workspace/app/.env/x", ["**\/.env"]), "**\/.env");
 * assert.equal(deniedBy("/workspace/app/main.ts", ["**\/.env"]), undefined);
 * ```
 */
export function deniedBy(path: string, patterns: readonly string[]): string | undefined {
  if (patterns.length === 0) return undefined;
  // A denied directory denies everything below it.
  let p = path;
  while (true) {
    for (const pattern of patterns) if (globToRegExp(pattern).test(p)) return pattern;
    if (p === "/") return undefined;
    const cut = p.lastIndexOf("/");
    p = cut <= 0 ? "/" : p.slice(0, cut);
  }
}

function refuse(code: ErrorCode, reason: string, path: string | null = null): PathDecision {
  return { allowed: false, path, code, reason };
}

/**
 * Decide a path lexically.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { decidePath } from "./index.ts";
 * const settings = {
 *   allow: ["/workspace"], deny: ["**\/.env"], readOnly: [],
 *   symlinks: "within" as const, max: 4096,
 * };
 * const decision = decidePath(settings, "/workspace", "../etc/passwd", "read");
 * assert.equal(decision.code, "path_not_allowed");
 * assert.equal(decidePath(settings, "/workspace", "app/.env", "read").code, "path_denied");
 * ```
 */
export function decidePath(
  settings: PathSettings,
  root: string,
  raw: unknown,
  op: PathOperation,
): PathDecision {
  if (typeof raw !== "string" || raw.length === 0) return refuse("invalid_path", "Path is missing");
  if (raw.includes("\0")) return refuse("invalid_path", "Path contains a NUL byte");
  if (raw.length > settings.max || new TextEncoder().encode(raw).length > settings.max) {
    return refuse("invalid_path", `Path is longer than ${settings.max} bytes`);
  }
  const path = resolve(root, raw);
  if (!settings.allow.some((tree) => isWithin(path, tree))) {
    return refuse("path_not_allowed", `Path ${path} is outside the allowed directories`, path);
  }
  // The server's own files (data directory with the store key, state directory, audit log,
  // policy file): never a file endpoint's.
  if (settings.refused?.some((tree) => isWithin(path, tree))) {
    return refuse("path_denied", `Path ${path} is inside the server's own files`, path);
  }
  const pattern = deniedBy(path, settings.deny);
  if (pattern !== undefined) {
    return refuse("path_denied", `Path ${path} matches a denied pattern`, path);
  }
  if (op !== "read" && settings.readOnly.some((tree) => isWithin(path, tree))) {
    return refuse("read_only", `Path ${path} is read-only`, path);
  }
  return { allowed: true, path, code: null, reason: "allowed by paths.allow" };
}

/**
 * Decide a path lexically and throw the refusal as an {@linkcode ApiError}; returns the
 * absolute path.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { guardPathLexically } from "./index.ts";
 * const settings = {
 *   allow: ["/workspace"], deny: [], readOnly: [], symlinks: "within" as const, max: 4096,
 * };
 * const path = guardPathLexically(settings, "/workspace", "src/a.ts", "read");
 * assert.equal(path, "/workspace/src/a.ts");
 * assert.throws(() => guardPathLexically(settings, "/workspace", "/etc/passwd", "read"), {
 *   code: "path_not_allowed",
 * });
 * ```
 */
export function guardPathLexically(
  settings: PathSettings,
  root: string,
  raw: unknown,
  op: PathOperation,
  param = "path",
): string {
  const d = decidePath(settings, root, raw, op);
  if (!d.allowed) throw new ApiError(d.code!, d.reason, { param });
  return d.path!;
}
