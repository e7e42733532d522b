/**
 * The `code` module: running code in the sandbox through the server's `run_code` endpoint.
 * Every method requires the sandbox's `code` capability and raises
 * `CapabilityNotSupportedError` (E3004) before any request when it is missing.
 *
 * What a context is here (the contract leaves it open): a named **working directory,
 * environment and default language**, stored in the sandbox itself (`.sandbar/contexts/<id>.json`
 * under its home), so any process connected to the sandbox sees the same contexts. Each run is a
 * fresh interpreter process: **variables do not persist between runs**; files written to the
 * context's directory do. There is no interpreter state to reset, so `restartContext` only
 * checks the context exists and records when it was restarted.
 *
 * Callbacks: the server answers a run as a whole, so `onStdout` and `onStderr` are called once,
 * when it ends, with all of that stream (not live); use `commands.run(cmd, { onStdout })` for
 * live output of a long program.
 *
 * @module
 */

import type { CodeLanguage } from "../client/devtools.ts";
import {
  CapabilityNotSupportedError,
  NotFoundError,
  ServerNotFoundError,
  ValidationError,
} from "../errors/mod.ts";
import type { CodeResult } from "../models/devtools.ts";
import type { ModuleContext } from "./module_context.ts";

/** A code context: working directory, environment, default language. */
export interface CodeContext {
  /** `ctx_` and 12 hex digits. */
  id: string;
  /** Default language of its runs. */
  language: CodeLanguage;
  /** Working directory of its runs. */
  cwd: string;
  /** Environment of its runs (a run's own `envs` go on top). */
  envs: Record<string, string>;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601 of the last `restartContext`, or null. */
  restartedAt: string | null;
}

/** Options of `code.run` and `Sandbox.runCode`. */
export interface CodeRunOptions {
  /** `python` (default, or the context's), `javascript`, `typescript`, `bash`. */
  language?: CodeLanguage;
  /** Seconds before the run is killed (default 30; `0` for none). */
  timeout?: number;
  /** Run in this context (its directory, environment and language). */
  contextId?: string;
  /** Environment variables of this run. */
  envs?: Record<string, string>;
  /** Called once, when the run ends, with its stdout (when not empty). */
  onStdout?: (data: string) => unknown;
  /** Called once, when the run ends, with its stderr (when not empty). */
  onStderr?: (data: string) => unknown;
  /** Called with the result. */
  onResult?: (result: CodeResult) => unknown;
}

const CONTEXTS = ".sandbar/contexts";
const CONTEXT_ID = /^ctx_[0-9a-f]{12}$/;

/** The `code` module of a sandbox. */
export class CodeModule {
  readonly #ctx: ModuleContext;

  /** Made by `Sandbox`. */
  constructor(ctx: ModuleContext) {
    this.#ctx = ctx;
  }

  #require(): void {
    if (!this.#ctx.capabilities.has("code")) {
      throw new CapabilityNotSupportedError(
        `Sandbox ${this.#ctx.sandboxId} does not have the code capability`,
        {
          suggestion: "Create the sandbox with a policy that enables the run_code endpoint " +
            "(the dev_tools group), and the language in params.languages.",
        },
      );
    }
  }

  /**
   * Run code and return its result. A program that fails is a result (`exitCode`, `stderr`),
   * not an error.
   *
   * @example
   * ```ts ignore
   * const r = await sandbox.code.run("print(6 * 7)");
   * r.text; // "42"
   * ```
   */
  async run(code: string, options: CodeRunOptions = {}): Promise<CodeResult> {
    this.#require();
    const context = options.contextId ? await this.#read(options.contextId) : undefined;
    const result = await this.#ctx.server().devtools.runCode(code, {
      language: options.language ?? context?.language ?? "python",
      timeout: options.timeout ?? 30,
      env: { ...context?.envs, ...options.envs },
      cwd: context?.cwd,
    });
    if (result.stdout) await options.onStdout?.(result.stdout);
    if (result.stderr) await options.onStderr?.(result.stderr);
    await options.onResult?.(result);
    return result;
  }

  /** Make a context (default language python, directory the sandbox's home). */
  async createContext(
    options: { language?: CodeLanguage; cwd?: string; envs?: Record<string, string> } = {},
  ): Promise<CodeContext> {
    this.#require();
    const hex = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16))
      .map((h) => h.padStart(2, "0")).join("");
    const files = this.#ctx.server().files;
    const cwd = options.cwd ?? (await files.stat(".")).path;
    const context: CodeContext = {
      id: `ctx_${hex}`,
      language: options.language ?? "python",
      cwd,
      envs: { ...options.envs },
      createdAt: new Date().toISOString(),
      restartedAt: null,
    };
    await files.upload(`${CONTEXTS}/${context.id}.json`, JSON.stringify(context));
    return context;
  }

  /** Every context of the sandbox, oldest first. */
  async listContexts(): Promise<CodeContext[]> {
    this.#require();
    const files = this.#ctx.server().files;
    if (!(await files.exists(CONTEXTS))) return [];
    const entries = (await files.list(CONTEXTS)).filter((e) => /\.json$/.test(e.name));
    const contexts = await Promise.all(entries.map((e) => this.#read(e.name.slice(0, -5))));
    return contexts.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** "Restart" a context: nothing persists between runs, so this records the time only. */
  async restartContext(contextId: string): Promise<CodeContext> {
    this.#require();
    const context = await this.#read(contextId);
    context.restartedAt = new Date().toISOString();
    await this.#ctx.server().files.upload(
      `${CONTEXTS}/${context.id}.json`,
      JSON.stringify(context),
    );
    return context;
  }

  /** Remove a context (its working directory and files are left alone). */
  async removeContext(contextId: string): Promise<void> {
    this.#require();
    await this.#read(contextId);
    await this.#ctx.server().files.delete(`${CONTEXTS}/${contextId}.json`);
  }

  async #read(contextId: string): Promise<CodeContext> {
    if (!CONTEXT_ID.test(contextId)) {
      throw new ValidationError(`${JSON.stringify(contextId)} is not a context id`);
    }
    try {
      const text = await this.#ctx.server().files.readText(`${CONTEXTS}/${contextId}.json`);
      return JSON.parse(text) as CodeContext;
    } catch (e) {
      if (e instanceof ServerNotFoundError) {
        throw new NotFoundError(`No code context ${contextId} in this sandbox`, {
          suggestion: "code.listContexts() lists the contexts; code.createContext() makes one.",
          cause: e,
        });
      }
      throw e;
    }
  }
}
