/**
 * `openMcpTools`: every `mcp` entry of an agent connected at once, for one session.
 *
 * - A server that fails (a guard refuses it, its credential cannot be used, it does not start
 *   or answer) is left out and listed in `failures`, unless its entry says `required: true`:
 *   then every server already opened is closed and `openMcpTools` rejects with
 *   {@linkcode McpRequiredServerError} naming it.
 * - Two entries with the same `server_label` are refused (`mcp_config_invalid` on the second):
 *   the label is what `mcp_call` items and tool names tell servers apart by.
 * - Every open set is also registered with the server, so stopping the server closes it (and
 *   kills its stdio servers) even if the runtime never called `close()`.
 *
 * @module
 */

import type { ServerState, Service } from "../../state.ts";
import { McpConnection } from "./connection.ts";
import { McpRequiredServerError, McpServerError } from "./errors.ts";
import { ToolNamer } from "./tool_names.ts";
import type {
  McpCallResult,
  McpContext,
  McpServerFailure,
  McpTool,
  McpToolConfig,
  McpToolSet,
} from "./types.ts";

/** The open tool sets of a server, closed with it. */
class OpenToolSets implements Service {
  readonly sets = new Set<McpToolSet>();

  async close(): Promise<void> {
    await Promise.allSettled([...this.sets].map((s) => s.close()));
    this.sets.clear();
  }
}

function openSets(state: ServerState): OpenToolSets {
  return state.service("agents.mcp", () => new OpenToolSets());
}

/** The model's arguments as an object, or the reason they are not one. */
function argumentsObject(args: unknown): Record<string, unknown> | string {
  let value = args;
  if (typeof args === "string") {
    if (args.trim() === "") return {};
    try {
      value = JSON.parse(args);
    } catch {
      return "the arguments are not valid JSON";
    }
  }
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    return "the arguments must be a JSON object";
  }
  return value as Record<string, unknown>;
}

class ToolSet implements McpToolSet {
  readonly tools: readonly McpTool[];
  readonly failures: readonly McpServerFailure[];
  readonly #byName: ReadonlyMap<string, { tool: McpTool; connection: McpConnection }>;
  readonly #connections: readonly McpConnection[];
  readonly #registry: OpenToolSets;
  #closing: Promise<void> | undefined;

  constructor(
    connections: McpConnection[],
    failures: McpServerFailure[],
    reserved: Iterable<string>,
    registry: OpenToolSets,
  ) {
    const namer = new ToolNamer(reserved);
    const byName = new Map<string, { tool: McpTool; connection: McpConnection }>();
    for (const connection of connections) {
      for (const t of connection.tools) {
        const tool: McpTool = {
          name: namer.name(connection.label, t.name),
          description: t.description ?? "",
          parameters: t.inputSchema as Record<string, unknown>,
          serverLabel: connection.label,
          toolName: t.name,
        };
        byName.set(tool.name, { tool, connection });
      }
    }
    this.tools = [...byName.values()].map((e) => e.tool);
    this.failures = failures;
    this.#byName = byName;
    this.#connections = connections;
    this.#registry = registry;
    registry.sets.add(this);
  }

  lookup(name: string): McpTool | undefined {
    return this.#byName.get(name)?.tool;
  }

  async call(name: string, args: unknown, signal?: AbortSignal): Promise<McpCallResult> {
    if (this.#closing) throw new Error("the MCP tool set is closed");
    const entry = this.#byName.get(name);
    if (!entry) return { output: `There is no MCP tool named ${name}.`, isError: true };
    const object = argumentsObject(args);
    if (typeof object === "string") {
      return { output: `${name}: ${object}.`, isError: true };
    }
    return await entry.connection.call(entry.tool.toolName, object, signal);
  }

  close(): Promise<void> {
    return this.#closing ??= (async () => {
      await Promise.allSettled(this.#connections.map((c) => c.close()));
      this.#registry.sets.delete(this);
    })();
  }
}

/**
 * Connect to every MCP server of an agent's `mcp` tool entries, for one session.
 *
 * Rejects with {@linkcode McpRequiredServerError} when a `required` server cannot be used
 * (nothing is left running then); any other failure is in the set's `failures`.
 *
 * @example
 * ```ts ignore
 * const set = await openMcpTools(agent.tools.filter((t) => t.type === "mcp"), {
 *   state, identity, workspace, env, vaultIds: session.vault_ids,
 *   reservedNames: ["shell", "apply_patch", ...functionToolNames],
 * });
 * try {
 *   // offer set.tools to the model as function tools; on a call of one of them:
 *   const { output, isError } = await set.call(name, argumentsJson, turnSignal);
 * } finally {
 *   await set.close();
 * }
 * ```
 */
export async function openMcpTools(
  configs: readonly McpToolConfig[],
  ctx: McpContext,
): Promise<McpToolSet> {
  const registry = openSets(ctx.state);
  const seen = new Set<string>();
  const attempts = configs.map((config) => {
    const label = config.server_label;
    if (seen.has(label)) {
      return Promise.reject(
        new McpServerError(label, "mcp_config_invalid", "another mcp tool has this server_label", {
          param: "server_label",
        }),
      );
    }
    seen.add(label);
    return McpConnection.open(config, ctx);
  });
  const settled = await Promise.allSettled(attempts);
  const connections: McpConnection[] = [];
  const failures: McpServerFailure[] = [];
  let required: McpServerError | undefined;
  for (const [i, outcome] of settled.entries()) {
    if (outcome.status === "fulfilled") {
      connections.push(outcome.value);
      continue;
    }
    const label = configs[i].server_label;
    const error = outcome.reason instanceof McpServerError
      ? outcome.reason
      : new McpServerError(label, "mcp_unavailable", (outcome.reason as Error).message, {
        cause: outcome.reason,
      });
    failures.push({ serverLabel: label, error });
    if (configs[i].required && !required) required = error;
  }
  if (required) {
    await Promise.allSettled(connections.map((c) => c.close()));
    throw new McpRequiredServerError(required);
  }
  return new ToolSet(connections, failures, ctx.reservedNames ?? [], registry);
}
