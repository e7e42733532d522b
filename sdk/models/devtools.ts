/**
 * Models of the dev_tools group.
 *
 * @module
 */

/** A file produced by code (the contract's output file record). */
export interface OutputFile {
  /** Name. */
  name: string;
  /** Path. */
  path: string;
  /** Bytes (default 0). */
  size: number;
  /** MIME type (default `application/octet-stream`). */
  mimeType: string;
}

/** The result of running code. */
export interface CodeResult {
  /** Stdout with trailing whitespace stripped. */
  text: string;
  /** Raw stdout. */
  stdout: string;
  /** Raw stderr. */
  stderr: string;
  /** Exit code (124 on timeout). */
  exitCode: number;
  /** Seconds. */
  executionTime: number;
  /** Files produced (this server collects none: always empty). */
  outputFiles: OutputFile[];
  /** The language it ran as. */
  language?: string;
  /** Whether the timeout killed it. */
  timedOut?: boolean;
  /** Bytes dropped from the front of stdout. */
  stdoutDropped?: number;
  /** Bytes dropped from the front of stderr. */
  stderrDropped?: number;
}

/** One changed file of `git status`. */
export interface GitFileStatus {
  /** Path relative to the repository. */
  path: string;
  /** The old path, for a rename or copy. */
  origPath?: string;
  /** git's index letter (`.`, `M`, `A`, `D`, `R`, `C`, `U`, `?`, `!`). */
  index: string;
  /** git's worktree letter. */
  worktree: string;
  /** One word: `modified`, `added`, `deleted`, `renamed`, `copied`, `conflicted`, `untracked`, `type_changed`. */
  status: string;
  /** Whether the index side changed. */
  staged: boolean;
}

/** `devtools.gitStatus()`. */
export interface GitStatus {
  /** The path asked about. */
  path: string;
  /** The repository's top folder. */
  repository: string;
  /** Branch, or null on a detached HEAD. */
  branch: string | null;
  /** HEAD's sha, or null before the first commit. */
  head: string | null;
  /** Upstream branch, or null. */
  upstream: string | null;
  /** Commits ahead of upstream, or null. */
  ahead: number | null;
  /** Commits behind upstream, or null. */
  behind: number | null;
  /** No changes at all. */
  clean: boolean;
  /** Changed files. */
  files: GitFileStatus[];
  /** True when the list was cut at 10 000 files. */
  truncated?: boolean;
}

/** `devtools.gitDiff()`. */
export interface GitDiff {
  /** The path asked about. */
  path: string;
  /** The repository's top folder. */
  repository: string;
  /** Unified diff text. */
  diff: string;
  /** Per file: additions, deletions, binary. */
  files: { path: string; additions: number; deletions: number; binary: boolean }[];
  /** True when `diff` was cut at `maxBytes`. */
  truncated: boolean;
}
