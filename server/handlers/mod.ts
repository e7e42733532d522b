/**
 * Every group's handlers, by endpoint id. An id of the endpoint table without a handler here is
 * reported and answered as off with the rule `code:unimplemented:<group>`.
 *
 * @module
 */

import { agentsHandlers } from "../agents/handlers.ts";
import { browserHandlers } from "./browser/index.ts";
import { commandsHandlers } from "./commands/index.ts";
import { coreHandlers } from "./core/index.ts";
import { devToolsHandlers } from "./dev_tools/index.ts";
import { fileOpsHandlers } from "./file_ops/index.ts";
import { processHandlers } from "./process/index.ts";
import { systemHandlers } from "./system/index.ts";
import { terminalHandlers } from "./terminal/index.ts";
import type { AgentsId, EndpointId } from "../endpoints.ts";
import type { GroupHandlers, HandlerMap } from "./types.ts";

/** All handlers; every group but `agents` is complete, which the type check enforces. */
export const HANDLERS: HandlerMap = {
  ...coreHandlers,
  ...commandsHandlers,
  ...fileOpsHandlers,
  ...processHandlers,
  ...systemHandlers,
  ...devToolsHandlers,
  ...terminalHandlers,
  ...browserHandlers,
  ...agentsHandlers,
} satisfies GroupHandlers<Exclude<EndpointId, AgentsId>> & HandlerMap<AgentsId>;
