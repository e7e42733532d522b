/**
 * A session's MCP servers: connected (through `openMcpTools`) when a turn first needs them,
 * with the session's workspace, environment variables, vaults and network setting, under the
 * policy of the identity that owns the session; kept open for its next turns; closed when the
 * session is deleted or the server stops (every stdio server's process group is then killed
 * and reaped, so none outlives its session).
 *
 * The set is opened again at a turn when the agent's `mcp` entries or the session's vaults
 * changed since (a session update), or when a server failed last time (it is tried again).
 *
 * @module
 */

import type { ServerState } from "../../state.ts";
import type { Identity } from "../../policy/compile.ts";
import { openMcpTools } from "../mcp/tool_set.ts";
import type { McpToolConfig, McpToolSet } from "../mcp/types.ts";
import type { SessionBody } from "./records.ts";
import type { ToolEnvironment } from "./tools/tool.ts";
import type { AgentsCore } from "../core.ts";
import type { McpHolder } from "./live_session.ts";

export type { McpHolder, SessionMcp } from "./live_session.ts";

/** The `mcp` entries of a session's agent. */
export function mcpConfigs(session: SessionBody): McpToolConfig[] {
  return session.agent.tools.filter((t) => t.type === "mcp") as unknown as McpToolConfig[];
}

/** What opening the set needs besides the session. */
export interface McpOpenContext {
  /** The server. */
  state: ServerState;
  /** The agents group's store and secret box. */
  core: AgentsCore;
  /** The session's owner. */
  identity: Identity | undefined;
  /** The session's environment, if any. */
  environment: ToolEnvironment | null;
  /** Names the model already has. */
  reservedNames: string[];
}

/**
 * The session's set for a turn, opened (again) when needed; undefined when the agent has no
 * `mcp` entry. Rejects with `McpRequiredServerError` when a `required` server cannot be used.
 */
export async function sessionMcpTools(
  holder: McpHolder,
  session: SessionBody,
  ctx: McpOpenContext,
): Promise<McpToolSet | undefined> {
  const configs = mcpConfigs(session);
  const key = JSON.stringify([configs, session.vault_ids, ctx.reservedNames]);
  const open = holder.mcp;
  if (open && open.key === key && open.set.failures.length === 0) return open.set;
  await closeSessionMcp(holder);
  if (configs.length === 0) return undefined;
  if (!ctx.identity) {
    throw new Error("the identity that owns this session is no longer in the policy");
  }
  const set = await openMcpTools(configs, {
    state: ctx.state,
    core: ctx.core,
    identity: ctx.identity,
    workspace: ctx.environment?.workspace,
    env: ctx.environment?.env,
    argvPrefix: ctx.environment?.networkPrefix,
    venv: ctx.environment?.venv ?? null,
    vaultIds: session.vault_ids,
    reservedNames: ctx.reservedNames,
  });
  holder.mcp = { key, set };
  return set;
}

/** Close the session's set, if open. */
export async function closeSessionMcp(holder: McpHolder): Promise<void> {
  const open = holder.mcp;
  holder.mcp = undefined;
  await open?.set.close();
}
