/**
 * {@linkcode CommandHandle}: a command running in the background, by pid. Iterate it for its
 * output (from the start, then live), `wait()` for its result, send input, kill it. Made by
 * `commands.start`, `commands.run(cmd, { background: true })` and `commands.connect(pid)`; any
 * number of handles, in any process, can follow the same pid.
 *
 * @module
 */

import type { ServerClient } from "../client/server_client.ts";
import type { ProcessChunk, ProcessInfo, ProcessResult } from "../models/process.ts";

/**
 * A background command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const handle = await sandbox.commands.start("for i in 1 2 3; do echo $i; done");
 * let seen = "";
 * for await (const chunk of handle) if (chunk.type === "stdout") seen += chunk.data;
 * assert.equal(seen, "1\n2\n3\n");
 * const result = await handle.wait(); // the output again, from the server's buffer
 * assert.deepEqual([result.exitCode, result.stdout], [0, "1\n2\n3\n"]);
 * ```
 */
export class CommandHandle implements AsyncIterable<ProcessChunk> {
  /** The process id (also its process-group id). */
  readonly pid: number;
  readonly #server: ServerClient;

  /** Made by the `commands` module. */
  constructor(server: ServerClient, pid: number) {
    this.#server = server;
    this.pid = pid;
  }

  /**
   * Its output from the first byte still buffered, then live, ending with the `exit` chunk.
   * Leaving the loop stops following; the command keeps running.
   */
  [Symbol.asyncIterator](): AsyncIterator<ProcessChunk> {
    return this.#server.process.follow(this.pid)[Symbol.asyncIterator]();
  }

  /**
   * Wait for the end and collect the output. Output that fell out of the server's buffer
   * before it was read (a command printing more than its `bufferBytes` faster than it is
   * followed) is counted in `stdoutDropped` (the buffer does not say which stream it was).
   */
  async wait(): Promise<ProcessResult> {
    let stdout = "";
    let stderr = "";
    let dropped = 0;
    let exit: ProcessChunk | undefined;
    for await (const chunk of this) {
      dropped += chunk.dropped ?? 0;
      if (chunk.type === "stdout") stdout += chunk.data;
      else if (chunk.type === "stderr") stderr += chunk.data;
      else exit = chunk;
    }
    const info = exit ? undefined : await this.info();
    const exitCode = exit?.exitCode ?? info?.exitCode ?? -1;
    return {
      pid: this.pid,
      stdout,
      stderr,
      exitCode,
      executionTime: exit?.executionTime ?? info?.executionTime ?? 0,
      timedOut: exit?.timedOut ?? info?.timedOut ?? false,
      signal: exit?.signal ?? info?.signal ?? null,
      stdoutDropped: dropped,
      stderrDropped: 0,
      success: exitCode === 0,
    };
  }

  /** Its state now (running, exit code, …). */
  info(): Promise<ProcessInfo> {
    return this.#server.process.get(this.pid);
  }

  /** Write to its stdin. */
  async sendInput(data: string | Uint8Array): Promise<void> {
    await this.#server.process.sendStdin(this.pid, data);
  }

  /** Close its stdin (it reads end of file). */
  async closeStdin(): Promise<void> {
    await this.#server.process.closeStdin(this.pid);
  }

  /** SIGKILL to its whole process group. */
  async kill(): Promise<void> {
    await this.#server.process.kill(this.pid);
  }
}
