/**
 * Running a helper program the server itself needs (`git`, `df`, `python3 --version`) to the end
 * with bounded output and a timeout, in its own process group like every other process. Such
 * runs are not caller processes: they are not in the process table.
 *
 * @module
 */

import type { Spawner } from "../confine/spawner.ts";
import { TailBuffer } from "../../shared/tail_buffer.ts";
import { HeadBuffer } from "./output.ts";
import { type ExitInfo, ManagedProcess, type SpawnRequest } from "./process_group.ts";

/** The result of {@linkcode runCaptured}. */
export interface CapturedRun {
  /** `maxBytes` of stdout: the last (default) or the first. */
  stdout: string;
  /** Last 64 KiB of stderr. */
  stderr: string;
  /** Bytes of stdout dropped. */
  stdoutDropped: number;
  /** How it ended. */
  exit: ExitInfo;
}

/**
 * Run `request` to the end. Throws what spawning throws (`Deno.errors.NotFound` for a missing
 * program).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { runCaptured } from "./run.ts";
 * const cmd = "echo hi; echo oops >&2; exit 3";
 * const r = await runCaptured({ cmd, cwd: "/", env: {}, timeoutMs: 5000 });
 * assert.equal(r.stdout, "hi\n");
 * assert.equal(r.stderr, "oops\n");
 * assert.equal(r.exit.exitCode, 3);
 * ```
 */
export async function runCaptured(
  request: SpawnRequest,
  maxBytes = 1 << 20,
  keep: "head" | "tail" = "tail",
): Promise<CapturedRun> {
  const out = {
    stdout: keep === "head" ? new HeadBuffer(maxBytes) : new TailBuffer(maxBytes),
    stderr: new TailBuffer(64 * 1024),
  };
  const p = new ManagedProcess(request, (type, bytes) => out[type].push(bytes));
  const exit = await p.exited;
  return {
    stdout: out.stdout.text(),
    stderr: out.stderr.text(),
    stdoutDropped: out.stdout.dropped,
    exit,
  };
}

/**
 * The stdout of a quick helper program, or `null` when it is missing, fails or takes longer
 * than `timeoutMs`. With `spawner`, it runs on that confinement.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolOutput } from "./run.ts";
 * const env = { PATH: "/usr/bin:/bin" };
 * assert.equal(await toolOutput(["sh", "-c", "echo 1.2.3"], env), "1.2.3\n");
 * assert.equal(await toolOutput(["sh", "-c", "exit 1"], env), null);
 * assert.equal(await toolOutput(["no-such-tool-here"], env), null);
 * ```
 */
export async function toolOutput(
  argv: string[],
  env: Record<string, string>,
  timeoutMs = 10000,
  cwd = "/",
  spawner?: Spawner,
): Promise<string | null> {
  try {
    const r = await runCaptured({ argv, cwd, env, timeoutMs, spawner });
    return r.exit.exitCode === 0 ? r.stdout : null;
  } catch {
    return null;
  }
}
