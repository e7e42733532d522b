/**
 * Every group's handlers, by endpoint id. An id of the endpoint table without a handler here is
 * reported and answered as off with the rule `code:unimplemented:<group>`.
 *
 * The browser and agents groups load on their first request (`./lazy.ts`): their ids come from
 * the endpoint table, their code (puppeteer; the MCP SDK and the model runtime) only when asked
 * for, so a server that serves neither never loads them.
 *
 * @module
 */

import { commandsHandlers } from "./named_commands/index.ts";
import { coreHandlers } from "./core/index.ts";
import { devToolsHandlers } from "./dev_tools/index.ts";
import { fileOpsHandlers } from "./file_ops/index.ts";
import { processHandlers } from "./process/index.ts";
import { systemHandlers } from "./system/index.ts";
import { terminalHandlers } from "./terminal/index.ts";
import { ENDPOINT_ROWS, type EndpointId } from "../endpoints.ts";
import { groupOnFirstUse } from "./lazy.ts";
import type { GroupHandlers, HandlerMap } from "../pipeline/handler.ts";

/** The browser group, loaded on its first request. */
const browserHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.browser.map((row) => row[0]),
  async () => (await import("./browser/index.ts")).browserHandlers,
);

/** The agents group (`/v1/`), loaded on its first request. */
const agentsHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.agents.map((row) => row[0]),
  async () => (await import("../agents/handlers.ts")).agentsHandlers,
);

/** All handlers: every group is complete, which the type check enforces. */
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
} satisfies GroupHandlers<EndpointId>;
