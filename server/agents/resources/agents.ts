/**
 * `/v1/agents`: reusable agent configurations (model, instructions, tools). Inside the sandbox
 * an agent is what a session will run; creating one runs nothing. Tools are stored without
 * secrets: an MCP server's token lives in a vault credential named by `credential_id`.
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../handlers/types.ts";
import { notFound } from "../errors.ts";
import { newId, unixNow } from "../ids.ts";
import { idempotentCreate, json, jsonText } from "../idempotency.ts";
import { plainListText } from "../pagination.ts";
import { readJson } from "../request.ts";
import { type AgentCreate, agentCreateSchema, agentUpdateSchema } from "../schemas/agents.ts";
import { agentsService } from "../service.ts";
import { tenantOf } from "../tenants.ts";

type Tool = NonNullable<AgentCreate["tools"]>[number];

/** A tool as stored and returned: optional lists and maps filled in, as the API answers. */
function persistedTool(tool: Tool): Record<string, unknown> {
  if (tool.type !== "mcp") return { ...tool };
  const t = tool.transport;
  const transport = t.type === "http"
    ? { type: "http", server_url: t.server_url, headers: t.headers ?? {} }
    : {
      type: "stdio",
      command: t.command,
      cwd: t.cwd,
      args: t.args ?? [],
      env_vars: t.env_vars ?? [],
    };
  return { ...tool, transport };
}

/** Fields of an agent configuration, all optional. */
export type Fields = Partial<AgentCreate>;

/** Apply create or update fields onto an agent body (an agent's, or a session's own). */
export function applyFields(agent: Record<string, unknown>, f: Fields): void {
  if (f.model !== undefined) agent.model = f.model;
  if (f.name !== undefined) agent.name = f.name;
  if (f.instructions !== undefined) agent.instructions = f.instructions;
  if (f.metadata !== undefined) agent.metadata = f.metadata ?? {};
  if (f.multi_agent !== undefined) {
    agent.multi_agent = {
      enabled: f.multi_agent?.enabled ?? false,
      max_concurrent_subagents: f.multi_agent?.max_concurrent_subagents ?? null,
    };
  }
  if (f.reasoning !== undefined) {
    agent.reasoning = {
      effort: f.reasoning?.effort ?? null,
      summary: f.reasoning?.summary ?? null,
    };
  }
  if (f.service_tier !== undefined) agent.service_tier = f.service_tier ?? "auto";
  if (f.text !== undefined) {
    agent.text = {
      format: f.text?.format ?? { type: "text" },
      verbosity: f.text?.verbosity ?? null,
    };
  }
  if (f.tools !== undefined) agent.tools = (f.tools ?? []).map(persistedTool);
  if (f.compaction !== undefined) agent.compaction = { async: f.compaction?.async ?? null };
  if (f.experimental !== undefined) agent.experimental = f.experimental;
}

/** The agents handlers. */
export const agentsResourceHandlers: HandlerMap<AgentsId> = {
  agents_create: async (c) => {
    const { store } = agentsService(c.get("state"));
    const owner = tenantOf(c).id;
    const body = await readJson(c, agentCreateSchema);
    return idempotentCreate(c, store, body.text, async (commit) => {
      const now = unixNow();
      const agent: Record<string, unknown> = {
        id: newId("agent"),
        object: "agent",
        created_at: now,
        updated_at: now,
        name: null,
        instructions: null,
        metadata: {},
        model: "",
        multi_agent: { enabled: false, max_concurrent_subagents: null },
        reasoning: { effort: null, summary: null },
        service_tier: "auto",
        text: { format: { type: "text" }, verbosity: null },
        tools: [],
      };
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
