/**
 * The link-aware path guard: the lexical decision of `./index.ts`, then what the disk says about
 * symbolic links, by `paths.symlinks`:
 *
 * - `allow`: links are followed like any directory; the lexical path is returned. Never into
 *   the server's own files (`files/withheld.ts`): what the path leads to is opened once by
 *   descriptor and refused with `symlink_denied` when it really is one of them.
 * - `within`: every link met on the way (in a parent component or the final one) is followed by
 *   hand, and allowed only while its real target stays inside an allowed tree and is not
 *   denied, nor read-only for a write or delete. A link that leads anywhere else is refused with
 *   `symlink_denied`. The returned path has no links left in it (as of the check).
 * - `deny`: any link in any component below the allowed tree is refused with `symlink_denied`.
 *
 * The allowed tree's own path (for example `/tmp` being a link on some systems) is the
 * operator's and is trusted; only components below it are walked. A path that does not exist
 * yet (a write) is checked up to its deepest existing ancestor. For `delete` (and the source of a
 * move) the final component is not followed, so deleting a link removes the link, never its
 * target; `deny` still refuses it.
 *
 * Check and use are two moments: a caller that opens the returned path should compare the opened
 * file with {@linkcode GuardedPath.stat} (see {@linkcode assertSameFile}); a link swapped in
 * between then gives `symlink_denied` instead of reaching another file.
 *
 * @module
 */

import { join } from "node:path";
import { ApiError } from "../../errors.ts";
import type { ServerState } from "../../state.ts";
import { type EntryStat, PinnedDirectory, WithheldFileError } from "../../files/pinned_dir.ts";
import { withheldTreeOf } from "../../files/withheld.ts";
import { decidePath, isWithin, type PathOperation } from "./index.ts";
import { realPathOr } from "../../../shared/real_path.ts";

export type { PathOperation } from "./index.ts";

/** How many links one path may pass through before it counts as a loop (Linux's limit). */
const MAX_LINK_HOPS = 40;

/** A path the guard let through, with what the disk said at the time of the check. */
export interface GuardedPath {
  /** The absolute path to use: with `within`/`deny`, free of links as of the check. */
  path: string;
  /** The absolute path as asked, after lexical normalization. */
  requested: string;
  /** Whether the path existed at the check. */
  exists: boolean;
  /** `lstat` of the path when it existed (of the link itself when the final link is kept). */
  stat: Deno.FileInfo | null;
  /** The deepest existing directory on the way, with its `lstat`; the parent of a new file. */
  ancestor: { path: string; stat: Deno.FileInfo };
  /** True when at least one link was followed to get to `path`. */
  followedLink: boolean;
}

/** Options of {@linkcode resolveGuardedPath}. */
export interface GuardOptions {
  /** Follow a link in the final component; default: true except for `delete`. */
  followFinal?: boolean;
}

function denied(param: string, message: string): ApiError {
  return new ApiError("symlink_denied", message, { param });
}

/** The allowed tree holding `path` (the longest one), if any. */
function anchorOf(allow: readonly string[], path: string): string | undefined {
  let best: string | undefined;
  for (const tree of allow) {
    if (isWithin(path, tree) && (best === undefined || tree.length > best.length)) best = tree;
  }
  return best;
}

// The walk's lookups are synchronous: each is a metadata call of a few microseconds on the
// sandbox's local file system, while the async forms cost a hop to Deno's blocking pool and
// back per call (~30 µs here), several per request on every path-taking endpoint, a shell's
// cwd included (see scripts/bench/process.ts).

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return null;
    throw e;
  }
}

/** One allowed tree as written in the policy and as it really is on disk. */
interface Tree {
  policy: string;
  real: string;
}

/** A real path in the policy's terms (through the tree that holds it), for the policy checks. */
function policyForm(trees: readonly Tree[], real: string): string | undefined {
  let best: Tree | undefined;
  for (const t of trees) {
    if (isWithin(real, t.real) && (best === undefined || t.real.length > best.real.length)) {
      best = t;
    }
  }
  if (!best) return undefined;
  return best.real === real ? best.policy : join(best.policy, real.slice(best.real.length));
}

/** True when `path` is a real allowed tree or inside one. */
function insideTrees(trees: readonly Tree[], path: string): boolean {
  return trees.some((t) => isWithin(path, t.real));
}

/** True when `path` is a proper ancestor of a real allowed tree (and inside none). */
function aboveTrees(trees: readonly Tree[], path: string): boolean {
  return !insideTrees(trees, path) && trees.some((t) => isWithin(t.real, path));
}

/** True when `path` is inside a real allowed tree, or an ancestor of one (a `..` on the way). */
function onTheWay(trees: readonly Tree[], path: string): boolean {
  return trees.some((t) => isWithin(path, t.real) || isWithin(t.real, path));
}

/**
 * The walk above looks at one component at a time, so a directory swapped for a link in the
 * middle of it could make the final `lstat` describe a file elsewhere. One kernel lookup that
 * refuses every link settles it: the same file must be there by a link-free path.
 */
function verifyWithoutLinks(
  path: string,
  seen: Deno.FileInfo,
  requested: string,
  param: string,
): void {
  let now: EntryStat | null;
  try {
    now = PinnedDirectory.statWithoutLinks(path);
  } catch (e) {
    throw new ApiError("symlink_denied", `Path ${requested} changed while it was checked`, {
      param,
      cause: e,
    });
  }
  if (now && (now.dev !== seen.dev || now.ino !== seen.ino)) {
    throw new ApiError("symlink_denied", `Path ${requested} changed while it was checked`, {
      param,
    });
  }
}

/**
 * Under `allow` the walk let the kernel follow links, so where `path` really leads is asked of
 * the kernel once, by descriptor: refused when it is one of the server's own files, and
 * `seen` (what the guard describes and the caller compares its open with) must be that same
 * file, or the path changed in between.
 */
function verifyNotWithheld(
  path: string,
  seen: Deno.FileInfo,
  followFinal: boolean,
  requested: string,
  param: string,
): void {
  let now: EntryStat | null;
  try {
    // A dangling final link is described as the link itself.
    now = PinnedDirectory.locate(path, followFinal && !seen.isSymlink);
  } catch (e) {
    if (e instanceof WithheldFileError) {
      throw denied(param, `Path ${requested} leads through a link into the server's own files`);
    }
    throw new ApiError("symlink_denied", `Path ${requested} changed while it was checked`, {
      param,
      cause: e,
    });
  }
  if (now && (now.dev !== seen.dev || now.ino !== seen.ino)) {
    throw new ApiError("symlink_denied", `Path ${requested} changed while it was checked`, {
      param,
    });
  }
}

/**
 * The guard, with what it found on disk; {@linkcode guardPath} returns just the path.
 */
export function resolveGuardedPath(
  state: ServerState,
  raw: unknown,
  op: PathOperation,
  param = "path",
  options: GuardOptions = {},
): GuardedPath {
  const settings = state.policy.paths;
  const lexical = decidePath(settings, state.root, raw, op);
  if (!lexical.allowed) throw new ApiError(lexical.code!, lexical.reason, { param });
  const requested = lexical.path!;
  const followFinal = options.followFinal ?? op !== "delete";
  const anchor = anchorOf(settings.allow, requested)!;
  const realAnchor = realPathOr(anchor);
  const trees: Tree[] = settings.allow.map((policy) => ({
    policy,
    real: policy === anchor ? realAnchor : realPathOr(policy),
  }));
  const mode = settings.symlinks;

  const rest = requested.slice(anchor === "/" ? 1 : anchor.length + 1);
  const queue = rest === "" ? [] : rest.split("/");
  let cur = realAnchor;
  let curStat = lstatOrNull(realAnchor);
  let ancestor = curStat ? { path: cur, stat: curStat } : null;
  let hops = 0;
  let followedLink = false;
  let exists = curStat !== null;

  while (queue.length > 0 && exists) {
    const name = queue.shift()!;
    if (name === "" || name === ".") continue;
    if (name === "..") {
      cur = cur === "/" ? "/" : cur.slice(0, cur.lastIndexOf("/")) || "/";
      // Above the allowed trees the runtime may not even let us look; the final check refuses
      // a path that ends there.
      curStat = insideTrees(trees, cur) ? lstatOrNull(cur) : null;
      continue;
    }
    const next = join(cur, name);
    if (aboveTrees(trees, next)) {
      // An ancestor of an allowed tree, reached by an absolute link or `..`: the operator's own
      // path, a directory, and not ours to inspect.
      cur = next;
      curStat = null;
      continue;
    }
    if (followedLink && mode === "within" && !onTheWay(trees, next)) {
      throw denied(
        param,
        `Path ${requested} passes through a link that leads outside the allowed directories`,
      );
    }
    let st: Deno.FileInfo | null;
    try {
      st = lstatOrNull(next);
    } catch (e) {
      // Outside the runtime's read permission: only reachable through a link.
      throw new ApiError("symlink_denied", `Path ${requested} leads through a link to ${next}`, {
        param,
        cause: e,
      });
    }
    if (st === null) {
      cur = next;
      curStat = null;
      exists = false;
      break;
    }
    const isFinal = queue.length === 0;
    if (st.isSymlink && mode !== "allow" && (followFinal || !isFinal)) {
      if (mode === "deny") {
        throw denied(param, `Path ${requested} contains a symbolic link (${next})`);
      }
      if (++hops > MAX_LINK_HOPS) throw denied(param, `Too many links in ${requested}`);
      let target: string;
      try {
        target = Deno.readLinkSync(next);
      } catch (e) {
        throw new ApiError("symlink_denied", `Path ${requested} changed while it was checked`, {
          param,
          cause: e,
        });
      }
      queue.unshift(...target.split("/"));
      if (target.startsWith("/")) cur = "/";
      followedLink = true;
      continue;
    }
    if (st.isSymlink && mode === "deny") {
      throw denied(param, `Path ${requested} is a symbolic link`);
    }
    cur = next;
    curStat = st;
    if (st.isDirectory) ancestor = { path: cur, stat: st };
  }
  // Whatever did not exist is appended as asked: it has no links in it, since it is not there.
  const path = queue.length > 0 ? join(cur, ...queue.filter((s) => s !== "" && s !== ".")) : cur;
  if (queue.some((s) => s === "..")) {
    // A link's target named `..` below a missing directory: resolve as the kernel would refuse.
    throw new ApiError("invalid_path", `Path ${requested} cannot be resolved`, { param });
  }

  if (followedLink) {
    const form = policyForm(trees, path);
    if (form === undefined) {
      throw denied(
        param,
        `Path ${requested} is a link to ${path}, outside the allowed directories`,
      );
    }
    const d = decidePath(settings, state.root, form, op);
    if (!d.allowed) {
      throw denied(param, `Path ${requested} is a link to ${path}, which is refused (${d.code})`);
    }
  }
  if (settings.refused?.some((tree) => isWithin(path, tree)) || withheldTreeOf(path)) {
    throw new ApiError("path_denied", `Path ${requested} leads into the server's own files`, {
      param,
    });
  }
  if (!ancestor) {
    // Not even the allowed tree exists: there is nothing to act on, and nothing to escape to.
    throw new ApiError("not_found", `Directory ${anchor} does not exist`, { param });
  }
  if (exists && curStat && mode !== "allow") verifyWithoutLinks(path, curStat, requested, param);
  let stat = exists ? curStat : null;
  if (mode === "allow" && stat?.isSymlink && followFinal) {
    // Links are followed under `allow`: describe what the kernel will open.
    try {
      stat = Deno.statSync(requested);
    } catch { /* a dangling link: described as the link */ }
  }
  if (mode === "allow") {
    if (exists && stat) verifyNotWithheld(requested, stat, followFinal, requested, param);
    else verifyNotWithheld(ancestor.path, ancestor.stat, true, requested, param);
  }
  return {
    path: mode === "allow" ? requested : path,
    requested,
    exists,
    stat,
    ancestor,
    followedLink,
  };
}

/**
 * The path guard for every path-taking endpoint: the lexical decision, then the link checks of
 * `paths.symlinks`. Returns the absolute path to use. Throws {@linkcode ApiError} with
 * `invalid_path` (400), `path_not_allowed`, `path_denied`, `read_only` or `symlink_denied`
 * (403).
 */
export function guardPath(
  state: ServerState,
  raw: unknown,
  op: PathOperation,
  param = "path",
): string {
  return resolveGuardedPath(state, raw, op, param).path;
}

/**
 * Refuse with `symlink_denied` when an opened file is not the one the guard checked: a link or
 * a directory was swapped in between the check and the open.
 */
export function assertSameFile(
  opened: Deno.FileInfo,
  checked: Deno.FileInfo | null,
  param = "path",
): void {
  if (!checked || opened.dev !== checked.dev || opened.ino !== checked.ino) {
    throw new ApiError(
      "symlink_denied",
      "The path changed between the check and the use (a link was swapped in)",
      { param },
    );
  }
}
