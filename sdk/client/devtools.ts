/**
 * `client.devtools`: the dev_tools group (`docs/server/dev_tools.md`): code and git.
 *
 * @module
 */

import type { CodeResult, GitDiff, GitStatus } from "../models/devtools.ts";
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
  /** Working directory (default the server's root). */
  cwd?: string;
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

  /** Run code (python, javascript, typescript through Deno with no permissions, bash). */
  async runCode(code: string, options: RunCodeOptions = {}): Promise<CodeResult> {
    const raw = await this.#t.json("run_code", {
      signal: options.signal,
      timeout: options.requestTimeout ??
        waitingRequestTimeout(this.#t.timeout, options.timeout, 30),
      json: {
        code,
        language: options.language,
        timeout: options.timeout,
        env: options.env,
        cwd: options.cwd,
      },
    });
    const r = camelize<CodeResult>(raw);
    r.outputFiles = (r.outputFiles ?? []).map((f) => ({
      ...f,
      size: f.size ?? 0,
      mimeType: f.mimeType ?? "application/octet-stream",
    }));
    return r;
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
