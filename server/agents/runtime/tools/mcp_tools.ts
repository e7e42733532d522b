/**
 * The tools of an agent's `mcp` entries, as a turn offers them: the session's
 * {@linkcode McpToolSet} (opened by the runtime when a turn first needs it, kept for the
 * session's next turns, closed when the session is deleted or the server stops) behind the
 * {@linkcode ToolProvider} interface.
 *
 * Each call is an `mcp_call` item (`server_label`, the tool's own `name`, the model's
 * `arguments`, then its `output` or `error`). A server that could not be used is not offered,
 * and the model is told why in its instructions; a call to a tool of such a server (named
 * `<server_label>__…`) answers that server's failure as the tool error, so the model reads the
 * guard's code (`url_denied`, `process_denied`, …) rather than "no such tool".
 *
 * @module
 */

import { mcpToolName } from "../../mcp/tool_names.ts";
import type { McpServerFailure, McpToolSet } from "../../mcp/types.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import { type ToolCall, type ToolContext, toolError, type ToolProvider } from "./tool.ts";

/** The model's arguments as recorded: the parsed object when they parse, else their text. */
function recordedArguments(text: string): unknown {
  try {
    return JSON.parse(text || "{}");
  } catch {
    return text;
  }
}

/** The prefix every tool name of a server starts with. */
function prefixOf(serverLabel: string): string {
  return mcpToolName(serverLabel, "x").slice(0, -1);
}

/**
 * A sentence for the model about each server that could not be used.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpServerError } from "../../mcp/errors.ts";
 * import { failureNotice } from "./mcp_tools.ts";
 * const error = new McpServerError("docs", "url_denied", "URL http://10.0.0.1/ is refused");
 * assert.equal(
 *   failureNotice([{ serverLabel: "docs", error }]),
 *   "These MCP servers could not be used, so their tools are not offered:\n" +
 *     "- docs: error (url_denied): MCP server 'docs': URL http://10.0.0.1/ is refused",
 * );
 * assert.equal(failureNotice([]), "");
 * ```
 */
export function failureNotice(failures: readonly McpServerFailure[]): string {
  if (failures.length === 0) return "";
  return "These MCP servers could not be used, so their tools are not offered:\n" +
    failures.map((f) => `- ${f.serverLabel}: ${toolError(f.error.code, f.error.message)}`)
      .join("\n");
}

/** The MCP tools of a session. */
export class McpTools implements ToolProvider {
  readonly #set: McpToolSet;

  /** Over the session's open set. */
  constructor(set: McpToolSet) {
    this.#set = set;
  }

  /** What the instructions tell the model about servers that failed ("" when none did). */
  notice(): string {
    return failureNotice(this.#set.failures);
  }

  /** The servers' tools. */
  definitions(): FunctionToolDefinition[] {
    return this.#set.tools.map((t) => ({
      type: "function",
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    }));
  }

  /** Calls to one of them, or to a tool of a server that failed. */
  handles(name: string): boolean {
    return this.#set.lookup(name) !== undefined || this.#failureOf(name) !== undefined;
  }

  #failureOf(name: string): McpServerFailure | undefined {
    return this.#set.failures.find((f) => name.startsWith(prefixOf(f.serverLabel)));
  }

  /** Call the tool; an `mcp_call` item records it. */
  async run(call: ToolCall, context: ToolContext): Promise<string> {
    const tool = this.#set.lookup(call.name);
    const failure = tool ? undefined : this.#failureOf(call.name);
    const item = context.item.open({
      type: "mcp_call",
      server_label: tool?.serverLabel ?? failure?.serverLabel ?? "",
      name: tool?.toolName ?? call.name,
      arguments: recordedArguments(call.arguments),
      output: null,
      error: null,
    });
    context.attributes["mcp.server_label"] = item.server_label as string;
    if (!tool) {
      const error = failure
        ? toolError(failure.error.code, failure.error.message)
        : toolError("unknown_tool", `there is no tool named '${call.name}'`);
      context.item.done({ error, status: "failed" });
      return error;
    }
    let result;
    try {
      result = await this.#set.call(call.name, call.arguments, context.signal);
    } catch (e) {
      context.item.done({ error: (e as Error).message, status: "incomplete" });
      throw e;
    }
    if (result.isError) {
      context.item.done({ error: result.output, status: "failed" });
      return toolError("mcp_tool_error", result.output);
    }
    context.item.done({ output: result.output, status: "completed" });
    return result.output;
  }
}
