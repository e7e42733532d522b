/**
 * The agents group's handlers by endpoint id, put together for `server/handlers/mod.ts`.
 *
 * @module
 */

import type { AgentsId } from "../endpoints.ts";
import type { HandlerMap } from "../pipeline/handler.ts";
import { agentsResourceHandlers } from "./resources/agents.ts";
import { environmentsResourceHandlers } from "./resources/environments.ts";
import { templatesResourceHandlers } from "./resources/templates.ts";
import { filesResourceHandlers } from "./resources/files.ts";
import { modelsResourceHandlers } from "./resources/models.ts";
import { responsesResourceHandlers } from "./resources/responses.ts";
import { vaultsResourceHandlers } from "./resources/vaults.ts";
import { sessionsResourceHandlers } from "./resources/sessions.ts";
import { sessionEventsHandlers } from "./resources/session_events.ts";
import { sessionTurnsHandlers } from "./resources/session_turns.ts";
import { sessionOutputsHandlers } from "./resources/session_outputs.ts";
import { automationsHandlers } from "./automations/handlers.ts";
import { subagentsResourceHandlers } from "./resources/subagents.ts";

/** Every implemented `/v1/` endpoint. */
export const agentsHandlers: HandlerMap<AgentsId> = {
  ...agentsResourceHandlers,
  ...vaultsResourceHandlers,
  ...modelsResourceHandlers,
  ...responsesResourceHandlers,
  ...filesResourceHandlers,
  ...environmentsResourceHandlers,
  ...templatesResourceHandlers,
  ...sessionsResourceHandlers,
  ...sessionEventsHandlers,
  ...sessionTurnsHandlers,
  ...sessionOutputsHandlers,
  ...automationsHandlers,
  ...subagentsResourceHandlers,
};
