/**
 * `/v1/models`: the upstream model provider's models, so a caller in the sandbox can see what
 * an agent's `model` may name. The list is fetched from the upstream and kept for a minute;
 * `retrieve` answers from that list (an unknown model is a 404 naming `model`).
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { notFound } from "../errors.ts";
import { json } from "../idempotency.ts";
import { parseQuery } from "../v1_request_reader.ts";
import { type AgentsService, agentsService } from "../service.ts";
import { callUpstream } from "../upstream.ts";

/** How long the upstream's list is kept, in milliseconds. */
export const MODELS_CACHE_MS = 60_000;

interface Model {
  id: string;
  [k: string]: unknown;
}

const caches = new WeakMap<AgentsService, { at: number; models: Model[] }>();

/** The models, from the cache or the upstream; or the answer to send instead. */
async function models(c: Context<ServerEnv>): Promise<Model[] | Response> {
  const service = agentsService(c.var.state);
  const cached = caches.get(service);
  if (cached && Date.now() - cached.at < MODELS_CACHE_MS) return cached.models;
  const result = await callUpstream(service.config.upstream, "GET", "/models");
  if (!result.ok) return result.answer;
  const body = await result.response.json().catch(() => undefined);
  const list = Array.isArray(body?.data) ? body.data as unknown[] : undefined;
  const valid = list?.filter((m): m is Model =>
    typeof m === "object" && m !== null && typeof (m as Model).id === "string"
  );
  if (!valid) {
    throw new Error("the upstream's model list has no `data` array");
  }
  const normalized = valid.map((m) => ({
    id: m.id,
    object: "model",
    created: typeof m.created === "number" ? m.created : 0,
    owned_by: typeof m.owned_by === "string" ? m.owned_by : "upstream",
  }));
  caches.set(service, { at: Date.now(), models: normalized });
  return normalized;
}

/** The models handlers. */
export const modelsResourceHandlers: HandlerMap<AgentsId> = {
  agents_models_list: async (c) => {
    parseQuery(new URL(c.req.url).search, []);
    const list = await models(c);
    if (list instanceof Response) return list;
    return json({ status: 200, body: { object: "list", data: list } });
  },
  agents_models_retrieve: async (c) => {
    const id = c.req.param("model")!;
    const list = await models(c);
    if (list instanceof Response) return list;
    const found = list.find((m) => m.id === id);
    if (!found) throw notFound("model", id, "model");
    return json({ status: 200, body: found });
  },
};
