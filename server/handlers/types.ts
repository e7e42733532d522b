/**
 * The shape every group's handlers share, so that `server/handlers/mod.ts` can put them together
 * and the endpoint table decides which ids have one.
 *
 * A handler runs after the whole pipeline has admitted the request: `c.var.identity`,
 * `c.var.endpoint` and `c.var.state` are set. It throws {@linkcode ApiError} for refusals.
 *
 * @module
 */

import type { Context } from "hono";
import type { ServerEnv } from "../state.ts";

/** One endpoint's handler. */
export type EndpointHandler = (c: Context<ServerEnv>) => Response | Promise<Response>;

/** Handlers by endpoint id. */
export type HandlerMap = Readonly<Record<string, EndpointHandler>>;
