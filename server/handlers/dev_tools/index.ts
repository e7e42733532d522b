/**
 * The dev_tools group: running code and reading git repositories. Wire shapes:
 * `docs/server/dev_tools.md`.
 *
 * @module
 */

import type { GroupHandlers } from "../types.ts";
import type { DevToolsId } from "../../endpoints.ts";
import { gitDiff, gitStatus } from "./git.ts";
import { runCode } from "./run_code.ts";

/**
 * The dev_tools group's handlers.
 */
export const devToolsHandlers: GroupHandlers<DevToolsId> = {
  run_code: runCode,
  git_status: gitStatus,
  git_diff: gitDiff,
};
