/**
 * The shape every group's handlers share, so that `server/handlers/mod.ts` can put them together
 * and the endpoint table decides which ids have one. It lives with the pipeline, which calls a
 * handler as its last step, so a group's HTTP layer outside `server/handlers/` (the agents
 * group's `server/agents/resources/`) needs nothing from that folder.
 *
 * A handler runs after the whole pipeline has admitted the request: `c.var.identity`,
 * `c.var.endpoint` and `c.var.state` are set. It throws {@linkcode ApiError} for refusals.
 *
 * @module
 */

import type { Context } from "hono";
import type { EndpointId } from "../endpoints.ts";
import type { ServerEnv } from "../state.ts";

/** One endpoint's handler. */
export type EndpointHandler = (c: Context<ServerEnv>) => Response | Promise<Response>;

/**
 * A complete group's handlers: one for every id of `Id`, and nothing else. Written as an object
 * literal of this type, a misspelled id is an excess property and a missing one a missing
 * property, so both fail `deno check`.
 */
export type GroupHandlers<Id extends EndpointId> = { readonly [K in Id]: EndpointHandler };

/**
 * Handlers by endpoint id, where some ids may have none yet (answered as off with the rule
 * `code:unimplemented:<group>`). An id outside the table still fails the type check.
 */
export type HandlerMap<Id extends EndpointId = EndpointId> = {
  readonly [K in Id]?: EndpointHandler;
};
