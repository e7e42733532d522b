/**
 * The dev_tools group: running code and reading git repositories. Wire shapes:
 * `docs/server/dev_tools.md`.
 *
 * @module
 */

import type { GroupHandlers } from "../../pipeline/handler.ts";
import type { DevToolsId } from "../../endpoints.ts";
import { gitDiff, gitStatus } from "./git.ts";
import { onFirstUse } from "../lazy.ts";

/**
 * The dev_tools group's handlers.
 */
export const devToolsHandlers: GroupHandlers<DevToolsId> = {
  // The code group (kernels, contexts) loads with the first run.
  run_code: onFirstUse(async () => (await import("./run_code.ts")).runCode),
  git_status: gitStatus,
  git_diff: gitDiff,
};
