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

/**
 * A display output or the value of the last expression, with its MIME bundle (as E2B's `Result`
 * carries it): `text/plain`, `text/html`, `text/markdown`, `image/png`, `image/jpeg`,
 * `image/svg+xml`, `application/json`, `application/pdf`, `text/latex`, `application/javascript`.
 * Images and PDFs are base64.
 */
export interface CodeOutput {
  /** True for the value of the last expression, false for a display (a figure, `display()`). */
  isMainResult: boolean;
  /** Every representation, by MIME type. */
  data: Record<string, unknown>;
  /** `text/plain`. */
  text?: string;
  /** `text/html` (a pandas DataFrame). */
  html?: string;
  /** `text/markdown`. */
  markdown?: string;
  /** `image/png`, base64 (a matplotlib figure). */
  png?: string;
  /** `image/jpeg`, base64. */
  jpeg?: string;
  /** `image/svg+xml`. */
  svg?: string;
  /** `application/pdf`, base64. */
  pdf?: string;
  /** `text/latex`. */
  latex?: string;
  /** `application/json`. */
  json?: unknown;
  /** `application/javascript`. */
  javascript?: string;
}

/** An exception the code raised. */
export interface CodeError {
  /** Its class: `ZeroDivisionError`, `TypeError`, `KeyboardInterrupt` (after a timeout). */
  name: string;
  /** Its message. */
  value: string;
  /** Traceback lines, without terminal colours. */
  traceback: string[];
}

/** The result of running code. */
export interface CodeResult {
  /** Stdout with trailing whitespace stripped. */
  text: string;
  /** Raw stdout. */
  stdout: string;
  /** Raw stderr (an error's traceback is added at its end, as an interpreter prints it). */
  stderr: string;
  /** 0; 1 when the code raised; a shell's last status; 124 on timeout. */
  exitCode: number;
  /** Seconds. */
  executionTime: number;
  /** Files the run wrote into its context's outputs directory. */
  outputFiles: OutputFile[];
  /** Displays and the last expression's value, in order. */
  results?: CodeOutput[];
  /**
   * The last expression's value as text (the main result's `text`), or `undefined` when the code
   * ended in a statement. This is what E2B calls `execution.text`; here `text` is stdout.
   */
  value?: string;
  /** The exception raised, or null. */
  error?: CodeError | null;
  /** The context it ran in. */
  contextId?: string;
  /** The kernel's execution counter. */
  executionCount?: number | null;
  /** The kernel had to be restarted (it died or ignored the interrupt): its state is gone. */
  restarted?: boolean;
  /** The language it ran as. */
  language?: string;
  /** Whether it passed its timeout and was interrupted. */
  timedOut?: boolean;
  /** Bytes dropped from the front of stdout. */
  stdoutDropped?: number;
  /** Bytes dropped from the front of stderr. */
  stderrDropped?: number;
}

/** One line of a streamed run (`devtools.runCodeStream`), in the order things happened. */
export type CodeEvent =
  | { type: "stdout" | "stderr"; text: string }
  | { type: "result"; result: CodeOutput }
  | { type: "error"; error: CodeError }
  | { type: "end"; result: CodeResult };

/** A code context: a live kernel with its language, working directory and environment. */
export interface CodeContextInfo {
  /** `ctx_` and 12 hex digits. */
  id: string;
  /** Its language. */
  language: "python" | "javascript" | "typescript" | "bash";
  /** The kernel's working directory. */
  cwd: string;
  /** Where files for `outputFiles` go (also `$SANDBAR_OUTPUTS_DIR` in the kernel). */
  outputsDir: string;
  /** Names of the variables given at creation. */
  envKeys: string[];
  /** The kernel's pid. */
  pid: number | null;
  /** Whether it is the default context of its language and directory. */
  default: boolean;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601 of the last restart, or null. */
  restartedAt: string | null;
  /** Runs so far. */
  runs: number;
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
