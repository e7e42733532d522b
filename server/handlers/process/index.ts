/**
 * The process group: run and wait, run and stream, and background processes with their
 * signals, stdin and output. Wire shapes: `docs/server/process.md`.
 *
 * @module
 */

import type { GroupHandlers } from "../../pipeline/handler.ts";
import type { ProcessId } from "../../endpoints.ts";
import {
  processGet,
  processList,
  processOutput,
  processSignal,
  processStart,
  processStdin,
} from "./background.ts";
import { shell, shellStream } from "./shell.ts";

/**
 * The process group's handlers.
 */
export const processHandlers: GroupHandlers<ProcessId> = {
  shell,
  shell_stream: shellStream,
  process_start: processStart,
  process_list: processList,
  process_get: processGet,
  process_signal: processSignal,
  process_stdin: processStdin,
  process_output: processOutput,
};
