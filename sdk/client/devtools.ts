/**
 * `client.devtools`: the dev_tools group (`docs/server/dev_tools.md`): code and git.
 *
 * @module
 */

import type {
  CodeContextInfo,
  CodeError,
  CodeEvent,
  CodeOutput,
  CodeResult,
  GitDiff,
  GitStatus,
} from "../models/devtools.ts";
import { waitingRequestTimeout } from "./process.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";
import { camelize } from "./wire.ts";

/** The languages the server runs. */
export type CodeLanguage = "python" | "javascript" | "typescript" | "bash";

/** Options of `runCode`. */
export interface RunCodeOptions extends CallOptions {
  /** Default `python`; must be in the policy's `params.languages`. */
  language?: CodeLanguage;
  /** Deadline in seconds (default 30; `0` for none). */
  timeout?: number;
  /** Environment variables on top of the server's environment store. */
  env?: Record<string, string>;
  /** Working directory (default the server's root); not with `contextId`. */
  cwd?: string;
  /** Run in this context (default: the default context of the language and directory). */
  contextId?: string;
}

/** Options of `createContext`. */
export interface CreateContextOptions extends CallOptions {
  /** Default `python`. */
  language?: CodeLanguage;
  /** The kernel's working directory (default the server's root). */
  cwd?: string;
  /** The kernel's environment on top of the server's environment store. */
  env?: Record<string, string>;
}

/** Options of `gitDiff`. */
export interface GitDiffOptions extends CallOptions {
  /** The repository or a folder inside it (default the server's root). */
  path?: string;
  /** The index against HEAD (default: the working tree against the index). */
  staged?: boolean;
  /** Compare against this revision. */
  ref?: string;
  /** Only this file (relative to the repository). */
  file?: string;
  /** Cut the diff at this many bytes (default 1 MiB). */
  maxBytes?: number;
}

/**
 * The dev_tools group: runCode, gitStatus, gitDiff.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * const r = await client.devtools.runCode("print(6 * 7)");
 * assert.equal(r.text, "42");
 * await client.process.shell("git init -q app");
 * assert.equal((await client.devtools.gitStatus("app")).clean, true);
 * ```
 */
export class DevtoolsApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  /**
   * Run code in a live kernel and wait for the result. Without `contextId` it runs in the
   * default context of its language and directory, whose state persists between runs.
   */
  async runCode(code: string, options: RunCodeOptions = {}): Promise<CodeResult> {
    const raw = await this.#t.json("run_code", {
      signal: options.signal,
      timeout: this.#requestTimeout(options),
      json: this.#runBody(code, options, false),
    });
    return toCodeResult(raw);
  }

  /**
   * Run code and yield its stdout, stderr, results and error as they happen; the last event is
   * `end` with the whole result. Leaving the loop early closes the stream; the run itself goes
   * on in its context until it ends or times out.
   */
  async *runCodeStream(code: string, options: RunCodeOptions = {}): AsyncGenerator<CodeEvent> {
    const lines = this.#t.lines("run_code", {
      signal: options.signal,
      timeout: this.#requestTimeout(options),
      json: this.#runBody(code, options, true),
    });
    for await (const raw of lines) {
      const line = raw as Record<string, unknown>;
      if (line.type === "stdout" || line.type === "stderr") {
        yield { type: line.type, text: String(line.text ?? "") };
      } else if (line.type === "result") {
        yield { type: "result", result: toOutput(line) };
      } else if (line.type === "error") {
        yield { type: "error", error: toError(line)! };
      } else if (line.type === "end") {
        yield { type: "end", result: toCodeResult(line) };
      }
    }
  }

  /** Start a context: a fresh kernel of `language` in `cwd` with `env`. */
  async createContext(options: CreateContextOptions = {}): Promise<CodeContextInfo> {
    const { language, cwd, env } = options;
    return camelize<CodeContextInfo>(
      await this.#t.json("run_code", {
        ...callRequest(options),
        json: { action: "create_context", language, cwd, env },
      }),
    );
  }

  /** The caller's contexts, oldest first (default contexts included). */
  async listContexts(options: CallOptions = {}): Promise<CodeContextInfo[]> {
    const raw = await this.#t.json("run_code", {
      ...callRequest(options),
      json: { action: "list_contexts" },
    }) as { contexts: unknown[] };
    return camelize<CodeContextInfo[]>(raw.contexts);
  }

  /** Give a context a fresh kernel: its variables and imports are gone. */
  async restartContext(contextId: string, options: CallOptions = {}): Promise<CodeContextInfo> {
    return camelize<CodeContextInfo>(
      await this.#t.json("run_code", {
        ...callRequest(options),
        json: { action: "restart_context", context_id: contextId },
      }),
    );
  }

  /** End a context's kernel and every process it started. */
  async removeContext(contextId: string, options: CallOptions = {}): Promise<void> {
    await this.#t.json("run_code", {
      ...callRequest(options),
      json: { action: "remove_context", context_id: contextId },
    });
  }

  #requestTimeout(options: RunCodeOptions): number | undefined {
    return options.requestTimeout ?? waitingRequestTimeout(this.#t.timeout, options.timeout, 30);
  }

  #runBody(code: string, options: RunCodeOptions, stream: boolean): Record<string, unknown> {
    return {
      code,
      language: options.language,
      timeout: options.timeout,
      env: options.env,
      cwd: options.cwd,
      context_id: options.contextId,
      stream: stream || undefined,
    };
  }

  /** `git status` of the repository holding `path` (default the server's root). */
  async gitStatus(path?: string, options: CallOptions = {}): Promise<GitStatus> {
    return camelize<GitStatus>(
      await this.#t.json("git_status", { ...callRequest(options), query: { path } }),
    );
  }

  /** `git diff` of the repository holding `path`. */
  async gitDiff(options: GitDiffOptions = {}): Promise<GitDiff> {
    const { path, staged, ref, file, maxBytes } = options;
    return camelize<GitDiff>(
      await this.#t.json("git_diff", {
        ...callRequest(options),
        query: { path, staged, ref, file, max_bytes: maxBytes },
      }),
    );
  }
}

const FIELDS: Readonly<Record<string, keyof CodeOutput>> = {
  "text/plain": "text",
  "text/html": "html",
  "text/markdown": "markdown",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/svg+xml": "svg",
  "application/pdf": "pdf",
  "text/latex": "latex",
  "application/json": "json",
  "application/javascript": "javascript",
};

/** A wire result (`{data, is_main_result}`) with E2B's named fields filled in. */
function toOutput(raw: Record<string, unknown>): CodeOutput {
  const data = (raw.data ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { isMainResult: raw.is_main_result === true, data };
  for (const [mime, field] of Object.entries(FIELDS)) {
    if (mime in data) out[field] = data[mime];
  }
  return out as unknown as CodeOutput;
}

function toError(raw: Record<string, unknown>): CodeError | null {
  if (!raw || typeof raw.name !== "string") return null;
  return {
    name: raw.name,
    value: String(raw.value ?? ""),
    traceback: Array.isArray(raw.traceback) ? raw.traceback.map(String) : [],
  };
}

/** A wire CodeResult (MIME bundles are kept as they are). */
function toCodeResult(raw: unknown): CodeResult {
  const wire = raw as Record<string, unknown>;
  const { results, error, type: _type, ...rest } = wire;
  const r = camelize<CodeResult>(rest);
  r.results = Array.isArray(results)
    ? results.map((x) => toOutput(x as Record<string, unknown>))
    : [];
  r.error = toError(error as Record<string, unknown>);
  r.value = r.results.find((o) => o.isMainResult)?.text;
  r.outputFiles = (r.outputFiles ?? []).map((f) => ({
    ...f,
    size: f.size ?? 0,
    mimeType: f.mimeType ?? "application/octet-stream",
  }));
  return r;
}
