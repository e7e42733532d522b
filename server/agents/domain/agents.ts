/**
 * Agent configurations as plain data: the fields none of an agent's settings name (one set of
 * defaults, for a stored agent, a session's own and an automation's target alike), a new
 * agent's body, and applying create or update fields onto a body. Tools are stored without
 * secrets: an MCP server's token lives in a vault credential named by `credential_id`.
 *
 * @module
 */

import type { AgentCreate } from "../schemas/agents.ts";

/** A fresh copy of the defaults, in the order the API answers them; the caller may change it. */
export function defaultAgentFields(): Record<string, unknown> {
  return {
    instructions: null,
    model: "",
    multi_agent: { enabled: false, max_concurrent_subagents: null },
    reasoning: { effort: null, summary: null },
    service_tier: "auto",
    text: { format: { type: "text" }, verbosity: null },
    tools: [],
  };
}

/** A new stored agent's body before its fields are applied, in the order the API answers it. */
export function newAgentBody(id: string, now: number): Record<string, unknown> {
  const { instructions, ...rest } = defaultAgentFields();
  return {
    id,
    object: "agent",
    created_at: now,
    updated_at: now,
    name: null,
    instructions,
    metadata: {},
    ...rest,
  };
}

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
