/**
 * The automations' handlers, put together for `../handlers.ts`.
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { automationsResourceHandlers } from "./automations_resource.ts";
import { invocationsResourceHandlers } from "./invocations_resource.ts";

/** The 10 automations endpoints. */
export const automationsHandlers: HandlerMap<AgentsId> = {
  ...automationsResourceHandlers,
  ...invocationsResourceHandlers,
};
