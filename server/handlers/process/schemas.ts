/**
 * The body schemas of the process group. The guarded fields (`cmd`, `argv`, `cwd`, `env`) are
 * `unknown` here: their guards in `server/process/start.ts` check them, for these endpoints and
 * for every other caller that starts a process.
 *
 * @module
 */

import { z } from "zod";

const MiB = 1024 * 1024;

/** Fields every process start takes; the guarded ones are checked by their guards, not zod. */
const common = {
  cmd: z.unknown().optional(),
  argv: z.unknown().optional(),
  cwd: z.unknown().optional(),
  env: z.unknown().optional(),
  timeout: z.number().min(0).max(86400).optional(),
};

/** Body of `shell` and `shell_stream`. */
export const ShellBody = z.strictObject({
  ...common,
  stdin: z.string().optional(),
  max_output_bytes: z.number().int().min(1).max(64 * MiB).optional(),
});

/** Body of `process_start`. */
export const StartBody = z.strictObject({
  ...common,
  stdin: z.boolean().optional(),
  buffer_bytes: z.number().int().min(1024).max(64 * MiB).optional(),
  tag: z.string().max(128).optional(),
});

/** Default per-stream limit of `shell` output. */
export const DEFAULT_MAX_OUTPUT = 16 * MiB;
