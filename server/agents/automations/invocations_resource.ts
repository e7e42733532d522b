/**
 * `/v1/agents/automations/{automation_id}/invocations`: a manual run (no body; honours
 * `Idempotency-Key`), retrieve and list. A manual run is delivered at once, whatever the
 * automation's status (paused and completed ones too), without changing its schedule, and is
 * answered as its delivery ended: `completed` with its `session_id`, `failed` with the
 * reason, or `skipped` when the target session still has a turn running.
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { notFound } from "../errors.ts";
import { idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import { emptyBodySchema } from "../schemas/automations.ts";
import { agentsService } from "../service.ts";
import { storedAutomation } from "./automations_resource.ts";
import type { InvocationBody } from "./records.ts";

/** The invocations handlers. */
export const invocationsResourceHandlers: HandlerMap<AgentsId> = {
  agents_automations_invocations_create: async (c) => {
    const { store, automations } = agentsService(c.var.state);
    const automation = storedAutomation(c);
    const { text } = await readJson(c, emptyBodySchema);
    return idempotentCreate(c, store, text, async () => ({
      status: 200,
      body: await automations.invokeNow(automation),
    }));
  },
  agents_automations_invocations_retrieve: (c) => {
    const { store } = agentsService(c.var.state);
    const automation = storedAutomation(c);
    const id = c.req.param("invocation_id")!;
    const found = store.get("invocation", id, automation.id);
    if (!found) throw notFound("invocation", id, "invocation_id");
    return json({ status: 200, body: found.body });
  },
  agents_automations_invocations_list: (c) => {
    const { store } = agentsService(c.var.state);
    const automation = storedAutomation(c);
    const q = parseQuery(new URL(c.req.url).search, PAGE_PARAMS);
    const page = listPage(
      store,
      "invocation",
      automation.id,
      pageRequest(q),
      (o) => o.body as InvocationBody,
    );
    return json({ status: 200, body: page });
  },
};
