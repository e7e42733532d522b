/**
 * `client.process`: the process group (`docs/server/process.md`).
 *
 * Three ways to run, as Cloudflare's SDK settled on after a boolean `stream` flag confused its
 * users: `shell` runs and waits, `shellStream` yields output as it comes (with `runStream` its
 * collecting twin, taking callbacks), `start` runs in the background (then `output`, `follow`,
 * `wait`, `sendStdin`, `signal`).
 *
 * Timeouts: a command's own `timeout` is in seconds (server default 60 for `shell`, none for
 * `start`); the HTTP request of `shell` is given the command's timeout plus a margin, so a
 * long command is never cut by the client's shorter per-request timeout.
 *
 * @module
 */

import { TimeoutError, ValidationError } from "../errors/mod.ts";
import type {
  ProcessChunk,
  ProcessInfo,
  ProcessOutput,
  ProcessResult,
  SignalResult,
  StdinResult,
} from "../models/process.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";
import { camelize, toDate } from "./wire.ts";

/** A shell string (run by `bash -c`) or an argv array (run directly, no shell). */
export type Command = string | readonly string[];

/** Options of `shell`, `shellStream`, `runStream`. */
export interface RunOptions extends CallOptions {
  /** Working directory (default the server's root); guarded like any path. */
  cwd?: string;
  /** Environment variables on top of the server's environment store. */
  env?: Record<string, string>;
  /** The command's deadline in seconds (server default 60; `0` for none). */
  timeout?: number;
  /** Text written to stdin, which is then closed. */
  stdin?: string;
  /** Per stream, the most output kept (default 16 MiB); the rest is counted as dropped. */
  maxOutputBytes?: number;
}

/** Options of `runStream`. */
export interface RunStreamOptions extends RunOptions {
  /** Called with each piece of stdout as it arrives. */
  onStdout?: (data: string) => unknown;
  /** Called with each piece of stderr as it arrives. */
  onStderr?: (data: string) => unknown;
}

/** Options of `start`. */
export interface StartOptions extends CallOptions {
  /** Working directory (default the server's root). */
  cwd?: string;
  /** Environment variables on top of the server's environment store. */
  env?: Record<string, string>;
  /** Deadline in seconds (default none). */
  timeout?: number;
  /** Keep a stdin pipe open for `sendStdin` (default true). */
  stdin?: boolean;
  /** Size of the output buffer in bytes (default 1 MiB). */
  bufferBytes?: number;
  /** A label shown in `list`. */
  tag?: string;
}

/** Options of `follow`. */
export interface FollowOptions {
  /** Start at this output position (default 0: everything still buffered). */
  offset?: number;
  /** Stop following after this many seconds (default: until the process exits). */
  timeout?: number;
  /** Stops following; the iteration then ends quietly. */
  signal?: AbortSignal;
}

/** Seconds the HTTP request of a waiting call gets beyond the operation's own deadline. */
const MARGIN_S = 10;

/** The HTTP timeout (s) for a call that waits `seconds` on the server; 0 (none) for none. */
export function waitingRequestTimeout(
  clientTimeout: number,
  seconds: number | undefined,
  serverDefault: number,
): number {
  const s = seconds ?? serverDefault;
  if (s === 0 || clientTimeout === 0) return 0;
  return Math.max(clientTimeout, s + MARGIN_S);
}

function commandBody(cmd: Command): Record<string, unknown> {
  if (typeof cmd === "string") return { cmd };
  if (Array.isArray(cmd)) return { argv: [...cmd] };
  throw new ValidationError("cmd must be a shell string or an argv array of strings");
}

function toResult(raw: Record<string, unknown>): ProcessResult {
  const r = camelize<Omit<ProcessResult, "success">>(raw);
  return {
    pid: r.pid ?? null,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? "",
    exitCode: r.exitCode,
    executionTime: r.executionTime ?? 0,
    timedOut: r.timedOut === true,
    signal: r.signal ?? null,
    stdoutDropped: r.stdoutDropped ?? 0,
    stderrDropped: r.stderrDropped ?? 0,
    success: r.exitCode === 0,
  };
}

function toChunk(raw: unknown): ProcessChunk {
  const c = camelize<ProcessChunk>(raw);
  return { ...c, exitCode: c.exitCode ?? null };
}

function toInfo(raw: unknown): ProcessInfo {
  const p = camelize<Record<string, unknown>>(raw);
  return {
    ...(p as unknown as ProcessInfo),
    startedAt: toDate(p.startedAt),
    endedAt: toDate(p.endedAt),
  };
}

function signalName(signal: string | number): string | number {
  return typeof signal === "string" && !signal.toUpperCase().startsWith("SIG")
    ? `SIG${signal.toUpperCase()}`
    : signal;
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/**
 * The process group.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * const r = await client.process.shell("echo hi; exit 3");
 * assert.deepEqual([r.stdout, r.exitCode, r.success], ["hi\n", 3, false]);
 * let out = "";
 * for await (const chunk of client.process.shellStream("for i in 1 2 3; do echo $i; done")) {
 *   if (chunk.type === "stdout") out += chunk.data;
 * }
 * assert.equal(out, "1\n2\n3\n");
 * const bg = await client.process.start(["sleep", "60"]);
 * await client.process.kill(bg.pid);
 * assert.equal((await client.process.wait(bg.pid)).signal, "SIGKILL");
 * ```
 */
export class ProcessApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  #runBody(cmd: Command, options: RunOptions): Record<string, unknown> {
    return {
      ...commandBody(cmd),
      cwd: options.cwd,
      env: options.env,
      timeout: options.timeout,
      stdin: options.stdin,
      max_output_bytes: options.maxOutputBytes,
    };
  }

  /**
   * Run a command and wait for it. A non-zero exit, a timeout or a signal is not an error:
   * the result says what happened (`exitCode`, `timedOut`, `signal`, `success`).
   */
  async shell(cmd: Command, options: RunOptions = {}): Promise<ProcessResult> {
    const raw = await this.#t.json<Record<string, unknown>>("shell", {
      signal: options.signal,
      timeout: options.requestTimeout ??
        waitingRequestTimeout(this.#t.timeout, options.timeout, 60),
      json: this.#runBody(cmd, options),
    });
    return toResult(raw);
  }

  /**
   * Run a command and yield its output as it comes; the last chunk is the `exit` chunk.
   * Leaving the loop early (or aborting `signal`) closes the stream and the server kills the
   * command's process group.
   */
  async *shellStream(cmd: Command, options: RunOptions = {}): AsyncGenerator<ProcessChunk> {
    const lines = this.#t.lines("shell_stream", {
      ...callRequest(options),
      json: this.#runBody(cmd, options),
    });
    for await (const raw of lines) yield toChunk(raw);
  }

  /**
   * The collecting twin of {@linkcode shellStream}: run, call `onStdout` / `onStderr` as output
   * arrives, and return the whole {@linkcode ProcessResult}.
   */
  async runStream(cmd: Command, options: RunStreamOptions = {}): Promise<ProcessResult> {
    const { onStdout, onStderr, ...run } = options;
    let stdout = "";
    let stderr = "";
    let exit: ProcessChunk | undefined;
    for await (const chunk of this.shellStream(cmd, run)) {
      if (chunk.type === "stdout") {
        stdout += chunk.data;
        await onStdout?.(chunk.data);
      } else if (chunk.type === "stderr") {
        stderr += chunk.data;
        await onStderr?.(chunk.data);
      } else {
        exit = chunk;
      }
    }
    if (!exit) {
      throw new ValidationError("The output stream ended without an exit chunk", {
        suggestion: "The command was cancelled or the connection dropped; run it again.",
      });
    }
    const raw = exit as unknown as Record<string, unknown>;
    return {
      pid: null,
      stdout,
      stderr,
      exitCode: exit.exitCode ?? -1,
      executionTime: exit.executionTime ?? 0,
      timedOut: exit.timedOut === true,
      signal: exit.signal ?? null,
      stdoutDropped: Number(raw.stdoutDropped ?? 0),
      stderrDropped: Number(raw.stderrDropped ?? 0),
      success: exit.exitCode === 0,
    };
  }

  /** Start a command in the background; read it with `output`, `follow`, `wait`. */
  async start(cmd: Command, options: StartOptions = {}): Promise<ProcessInfo> {
    const raw = await this.#t.json("process_start", {
      ...callRequest(options),
      json: {
        ...commandBody(cmd),
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeout,
        stdin: options.stdin,
        buffer_bytes: options.bufferBytes,
        tag: options.tag,
      },
    });
    return toInfo(raw);
  }

  /** This identity's processes (oldest first); `running: true` for the running ones only. */
  async list(options: CallOptions & { running?: boolean } = {}): Promise<ProcessInfo[]> {
    const body = await this.#t.json<{ processes: unknown[] }>("process_list", {
      ...callRequest(options),
      query: { running: options.running },
    });
    return body.processes.map(toInfo);
  }

  /** One process; `ServerNotFoundError` for an unknown pid. */
  async get(pid: number, options: CallOptions = {}): Promise<ProcessInfo> {
    return toInfo(await this.#t.json("process_get", { ...callRequest(options), params: { pid } }));
  }

  /**
   * Wait for a process to exit, at most `timeout` seconds (default: as long as it takes), and
   * return its final info. Still running at the deadline: `TimeoutError`.
   */
  async wait(pid: number, options: CallOptions & { timeout?: number } = {}): Promise<ProcessInfo> {
    const deadline = options.timeout === undefined ? Infinity : Date.now() + options.timeout * 1000;
    while (true) {
      // The server waits at most 300 s per request; wait again until the deadline.
      const slice = Math.max(1, Math.min(300, Math.ceil((deadline - Date.now()) / 1000)));
      const info = toInfo(
        await this.#t.json("process_get", {
          signal: options.signal,
          timeout: options.requestTimeout ?? waitingRequestTimeout(this.#t.timeout, slice, 30),
          params: { pid },
          query: { wait: true, timeout: slice },
        }),
      );
      if (!info.running) return info;
      if (Date.now() >= deadline) {
        throw new TimeoutError(`Process ${pid} still running after ${options.timeout} s`, {
          suggestion: "Wait longer, or stop it with process.terminate(pid) / process.kill(pid).",
        });
      }
    }
  }

  /**
   * Send a signal to the process's whole group: a name (`"SIGTERM"`, `"TERM"`) or a number;
   * the server accepts TERM, KILL, INT, HUP, QUIT, USR1, USR2, CONT, STOP.
   */
  async signal(
    pid: number,
    signal: string | number = "SIGTERM",
    options: CallOptions = {},
  ): Promise<SignalResult> {
    return await this.#t.json<SignalResult>("process_signal", {
      ...callRequest(options),
      params: { pid },
      json: { signal: signalName(signal) },
    });
  }

  /** `SIGTERM` to the process group. */
  terminate(pid: number, options: CallOptions = {}): Promise<SignalResult> {
    return this.signal(pid, "SIGTERM", options);
  }

  /** `SIGKILL` to the process group. */
  kill(pid: number, options: CallOptions = {}): Promise<SignalResult> {
    return this.signal(pid, "SIGKILL", options);
  }

  /** Write text or bytes to the process's stdin; `close: true` closes it afterwards. */
  async sendStdin(
    pid: number,
    data: string | Uint8Array,
    options: CallOptions & { close?: boolean } = {},
  ): Promise<StdinResult> {
    const json = typeof data === "string"
      ? { data, close: options.close }
      : { data: base64(data), encoding: "base64", close: options.close };
    return camelize<StdinResult>(
      await this.#t.json("process_stdin", { ...callRequest(options), params: { pid }, json }),
    );
  }

  /** Close the process's stdin (it sees end of file). */
  async closeStdin(pid: number, options: CallOptions = {}): Promise<StdinResult> {
    return camelize<StdinResult>(
      await this.#t.json("process_stdin", {
        ...callRequest(options),
        params: { pid },
        json: { close: true },
      }),
    );
  }

  /** The buffered output from `offset` (default 0); pass `nextOffset` back to get only news. */
  async output(
    pid: number,
    options: CallOptions & { offset?: number } = {},
  ): Promise<ProcessOutput> {
    const raw = await this.#t.json("process_output", {
      ...callRequest(options),
      params: { pid },
      query: { offset: options.offset },
    });
    const out = camelize<ProcessOutput>(raw);
    out.chunks = out.chunks.map(toChunk);
    return out;
  }

  /**
   * The output from `offset`, then new output as it comes, then the `exit` chunk: reattach to
   * a background process at any time. Ends at exit, after `timeout` seconds, or on `signal`.
   */
  async *follow(pid: number, options: FollowOptions = {}): AsyncGenerator<ProcessChunk> {
    const lines = this.#t.lines("process_output", {
      signal: options.signal,
      params: { pid },
      query: { follow: true, offset: options.offset, timeout: options.timeout },
    });
    for await (const raw of lines) yield toChunk(raw);
  }
}
