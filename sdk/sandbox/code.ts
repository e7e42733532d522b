/**
 * The `code` module: a code interpreter in the sandbox, through the server's `run_code` endpoint.
 * Every method requires the sandbox's `code` capability and raises
 * `CapabilityNotSupportedError` (E3004) before any request when it is missing.
 *
 * A context is a **live kernel** on the server (ipykernel for Python, Deno's Jupyter kernel for
 * JavaScript and TypeScript, a persistent bash) with its working directory, environment and
 * language. Variables, imports and the working directory persist between runs of a context;
 * `restartContext` gives it a fresh kernel; `removeContext` ends the kernel and its processes.
 * `run` without a context uses the default context of its language, stateful too, as E2B's
 * does. Contexts live on the server: every client of the sandbox sees the same ones, and they
 * outlive a client's disconnect (they end with the server).
 *
 * Callbacks are called during the run, in the order things happen: `onStdout` and `onStderr`
 * with each piece of output, `onResult` with each display (a matplotlib figure) and the last
 * expression's value.
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
import type { CodeContextInfo, CodeOutput, CodeResult } from "../models/devtools.ts";
import type { ModuleContext } from "./module_context.ts";

/** A code context: a live kernel with its working directory, environment and language. */
export type CodeContext = CodeContextInfo;

/** Options of `code.run` and `Sandbox.runCode`. */
export interface CodeRunOptions {
  /** `python` (default, or the context's), `javascript`, `typescript`, `bash`. */
  language?: CodeLanguage;
  /** Seconds before the run is interrupted (default 30; `0` for none). The context stays usable. */
  timeout?: number;
  /** Run in this context (its kernel, directory, environment and language). */
  contextId?: string;
  /** Environment variables of this run only (python and bash). */
  envs?: Record<string, string>;
  /** Called with each piece of stdout as it is printed. */
  onStdout?: (data: string) => unknown;
  /** Called with each piece of stderr as it is printed. */
  onStderr?: (data: string) => unknown;
  /** Called with each result (a display, the last expression's value) as it is produced. */
  onResult?: (result: CodeOutput) => unknown;
}

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
   * Run code and return its result. Code that raises is a result (`error`, `exitCode` 1), not an
   * exception; so is a run past its timeout (`timedOut`, `exitCode` 124).
   *
   * @example
   * ```ts ignore
   * await sandbox.code.run("x = 6 * 7");
   * const r = await sandbox.code.run("print(x)", { onStdout: (s) => console.log(s) });
   * r.text; // "42"
   * ```
   */
  async run(code: string, options: CodeRunOptions = {}): Promise<CodeResult> {
    this.#require();
    if (options.contextId !== undefined) checkId(options.contextId);
    const devtools = this.#ctx.server().devtools;
    const request = {
      language: options.contextId ? options.language : options.language ?? "python",
      timeout: options.timeout ?? 30,
      env: options.envs && Object.keys(options.envs).length > 0 ? options.envs : undefined,
      contextId: options.contextId,
    };
    return await this.#notFound(options.contextId, async () => {
      if (!options.onStdout && !options.onStderr && !options.onResult) {
        return await devtools.runCode(code, request);
      }
      let result: CodeResult | undefined;
      for await (const event of devtools.runCodeStream(code, request)) {
        if (event.type === "stdout") await options.onStdout?.(event.text);
        else if (event.type === "stderr") await options.onStderr?.(event.text);
        else if (event.type === "result") await options.onResult?.(event.result);
        else if (event.type === "end") result = event.result;
      }
      if (!result) {
        throw new ValidationError("The run's stream ended without its result", {
          suggestion: "The connection dropped; the context still exists, run the code again.",
        });
      }
      return result;
    });
  }

  /** Start a context: a fresh kernel (default language python, directory the server's root). */
  async createContext(
    options: { language?: CodeLanguage; cwd?: string; envs?: Record<string, string> } = {},
  ): Promise<CodeContext> {
    this.#require();
    return await this.#ctx.server().devtools.createContext({
      language: options.language ?? "python",
      cwd: options.cwd,
      env: options.envs,
    });
  }

  /** Every context of the sandbox (for this identity), oldest first. */
  async listContexts(): Promise<CodeContext[]> {
    this.#require();
    return await this.#ctx.server().devtools.listContexts();
  }

  /** Give a context a fresh kernel: its variables and imports are gone. */
  async restartContext(contextId: string): Promise<CodeContext> {
    this.#require();
    checkId(contextId);
    return await this.#notFound(
      contextId,
      () => this.#ctx.server().devtools.restartContext(contextId),
    );
  }

  /** Remove a context: its kernel and every process it started end (its files stay). */
  async removeContext(contextId: string): Promise<void> {
    this.#require();
    checkId(contextId);
    await this.#notFound(contextId, () => this.#ctx.server().devtools.removeContext(contextId));
  }

  async #notFound<T>(contextId: string | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      if (contextId && e instanceof ServerNotFoundError) {
        throw new NotFoundError(`No code context ${contextId} in this sandbox`, {
          suggestion: "code.listContexts() lists the contexts; code.createContext() makes one.",
          cause: e,
        });
      }
      throw e;
    }
  }
}

function checkId(contextId: string): void {
  if (!CONTEXT_ID.test(contextId)) {
    throw new ValidationError(`${JSON.stringify(contextId)} is not a context id`, {
      suggestion: "A context id is ctx_ and 12 hex digits, as code.createContext() returns.",
    });
  }
}
