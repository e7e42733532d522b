/**
 * `/v1/agents`: reusable agent configurations (model, instructions, tools). Inside the sandbox
 * an agent is what a session will run; creating one runs nothing. Tools are stored without
 * secrets: an MCP server's token lives in a vault credential named by `credential_id`.
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { notFound } from "../errors.ts";
import { newId, unixNow } from "../ids.ts";
import { idempotentCreate, json, jsonText } from "../idempotency.ts";
import { plainListText } from "../pagination.ts";
import { readJson } from "../v1_request_reader.ts";
import { agentCreateSchema, agentUpdateSchema } from "../schemas/agents.ts";
import { applyFields, newAgentBody } from "../domain/agents.ts";
import { agentsService } from "../service.ts";
import { checkToolTypes } from "../domain/sessions.ts";
import { tenantOf } from "../tenants.ts";

/** The agents handlers. */
export const agentsResourceHandlers: HandlerMap<AgentsId> = {
  agents_create: async (c) => {
    const { store } = agentsService(c.get("state"));
    const owner = tenantOf(c).id;
    const body = await readJson(c, agentCreateSchema);
    checkToolTypes((body.value.tools ?? []) as Record<string, unknown>[], "tools");
    return idempotentCreate(c, store, body.text, async (commit) => {
      const now = unixNow();
      const agent = newAgentBody(newId("agent"), now);
      applyFields(agent, body.value);
      // Serialised once: the stored body is the answer. Answered once committed, in a group
      // with the creates that arrived alongside it.
      const answer = { status: 200, text: JSON.stringify(agent) };
      await commit.soon(
        answer,
        () => store.insert("agent", agent.id as string, "", now, answer.text, null, owner),
      );
      return answer;
    });
  },
  agents_retrieve: (c) => {
    const { store } = agentsService(c.get("state"));
    const id = c.req.param("agent_id")!;
    const found = store.get("agent", id, "", tenantOf(c).sees);
    if (!found) throw notFound("agent", id, "agent_id");
    return json({ status: 200, body: found.body });
  },
  agents_update: async (c) => {
    const { store } = agentsService(c.get("state"));
    const id = c.req.param("agent_id")!;
    const body = await readJson(c, agentUpdateSchema);
    checkToolTypes((body.value.tools ?? []) as Record<string, unknown>[], "tools");
    const found = store.get("agent", id, "", tenantOf(c).sees);
    if (!found) throw notFound("agent", id, "agent_id");
    const agent = { ...found.body };
    applyFields(agent, body.value);
    agent.updated_at = unixNow();
    store.update(id, agent);
    return json({ status: 200, body: agent });
  },
  agents_list: (c) => {
    const { store } = agentsService(c.get("state"));
    return jsonText(plainListText(store, "agent", "", c.req.url, tenantOf(c).sees));
  },
  agents_delete: (c) => {
    const { store } = agentsService(c.get("state"));
    const id = c.req.param("agent_id")!;
    if (!store.get("agent", id, "", tenantOf(c).sees) || !store.delete(id)) {
      throw notFound("agent", id, "agent_id");
    }
    return json({ status: 200, body: { id, deleted: true, object: "agent.deleted" } });
  },
};
