/**
 * Parsing git's machine formats: `status --porcelain=v2 --branch -z` and `diff --numstat -z`.
 *
 * @module
 */

/** Most files listed by `git_status`. */
export const MAX_STATUS_FILES = 10000;

/** One changed path. */
export interface StatusFile {
  /** Path relative to the repository's top folder. */
  path: string;
  /** The previous path of a rename or copy. */
  orig_path?: string;
  /** git's X letter (index), `.` when unchanged. */
  index: string;
  /** git's Y letter (work tree). */
  worktree: string;
  /** One word for the change. */
  status: string;
  /** Whether the index side changed. */
  staged: boolean;
}

const WORDS: Readonly<Record<string, string>> = {
  M: "modified",
  A: "added",
  D: "deleted",
  R: "renamed",
  C: "copied",
  T: "type_changed",
  U: "conflicted",
};

function entry(xy: string, path: string, kind: string, orig?: string): StatusFile {
  const [x, y] = [xy[0], xy[1]];
  let status: string;
  if (kind === "u") status = "conflicted";
  else if (kind === "?") status = "untracked";
  else if (kind === "!") status = "ignored";
  else status = WORDS[x !== "." ? x : y] ?? "modified";
  const file: StatusFile = {
    path,
    index: x,
    worktree: y,
    status,
    staged: kind !== "?" && x !== ".",
  };
  if (orig !== undefined) file.orig_path = orig;
  return file;
}

/**
 * Parse `git status --porcelain=v2 --branch -z`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseStatus } from "./git_parse.ts";
 * const status = parseStatus("# branch.oid (initial)\0# branch.head main\0? a.txt\0");
 * assert.equal(status.files[0].status, "untracked");
 * assert.equal(status.files[0].path, "a.txt");
 * ```
 */
export function parseStatus(out: string) {
  const records = out.split("\0");
  let head: string | null = null;
  let branch: string | null = null;
  let upstream: string | null = null;
  let ahead: number | null = null;
  let behind: number | null = null;
  const files: StatusFile[] = [];
  let truncated = false;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    if (r === "") continue;
    if (r.startsWith("# branch.oid ")) {
      const oid = r.slice(13);
      head = oid === "(initial)" ? null : oid;
    } else if (r.startsWith("# branch.head ")) {
      const name = r.slice(14);
      branch = name === "(detached)" ? null : name;
    } else if (r.startsWith("# branch.upstream ")) upstream = r.slice(18);
    else if (r.startsWith("# branch.ab ")) {
      const m = /^\+(\d+) -(\d+)$/.exec(r.slice(12));
      if (m) [ahead, behind] = [Number(m[1]), Number(m[2])];
    } else if (r.startsWith("#")) continue;
    else {
      const kind = r[0];
      let file: StatusFile | undefined;
      if (kind === "1") file = entry(r.slice(2, 4), r.split(" ").slice(8).join(" "), kind);
      else if (kind === "2") {
        file = entry(r.slice(2, 4), r.split(" ").slice(9).join(" "), kind, records[++i]);
      } else if (kind === "u") file = entry(r.slice(2, 4), r.split(" ").slice(10).join(" "), kind);
      else if (kind === "?" || kind === "!") file = entry(kind + kind, r.slice(2), kind);
      if (!file) continue;
      if (files.length >= MAX_STATUS_FILES) {
        truncated = true;
        continue;
      }
      files.push(file);
    }
  }
  return {
    branch,
    head,
    upstream,
    ahead: upstream ? ahead : null,
    behind: upstream ? behind : null,
    clean: files.length === 0,
    files,
    truncated,
  };
}

/** Lines added and removed in one file. */
export interface NumstatFile {
  /** Path (the new one for a rename). */
  path: string;
  /** The old path of a rename. */
  orig_path?: string;
  /** Lines added; 0 for a binary file. */
  additions: number;
  /** Lines removed; 0 for a binary file. */
  deletions: number;
  /** Whether git saw it as binary. */
  binary: boolean;
}

/**
 * Parse `git diff --numstat -z`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseNumstat } from "./git_parse.ts";
 * const [change] = parseNumstat("3\t1\ta.ts\0");
 * assert.equal(change.additions, 3);
 * assert.equal(change.deletions, 1);
 * ```
 */
export function parseNumstat(out: string): NumstatFile[] {
  const records = out.split("\0");
  const files: NumstatFile[] = [];
  for (let i = 0; i < records.length; i++) {
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(records[i]);
    if (!m) continue;
    const binary = m[1] === "-";
    const counts = { additions: binary ? 0 : Number(m[1]), deletions: binary ? 0 : Number(m[2]) };
    if (m[3] === "") {
      const orig = records[++i];
      const path = records[++i];
      files.push({ path, orig_path: orig, ...counts, binary });
    } else files.push({ path: m[3], ...counts, binary });
  }
  return files;
}
