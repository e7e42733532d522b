/**
 * The tools of an agent's `mcp` entries, as a turn offers them: the session's
 * {@linkcode McpToolSet} (opened by the runtime when a turn first needs it, kept for the
 * session's next turns, closed when the session is deleted or the server stops) behind the
 * {@linkcode ToolProvider} interface.
 *
 * Each call is an `mcp_call` item (`server_label`, the tool's own `name`, the model's
 * `arguments`, then its `output` or `error`), declared here and kept by the registry
 * (`registry.ts`). A server that could not be used is not offered,
 * and the model is told why in its instructions; a call to a tool of such a server (named
 * `<server_label>__…`) answers that server's failure as the tool error, so the model reads the
 * guard's code (`url_denied`, `process_denied`, …) rather than "no such tool".
 *
 * @module
 */

import { mcpToolName } from "../../mcp/tool_names.ts";
import type { McpServerFailure, McpToolSet } from "../../mcp/types.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import { type Tool, ToolError, toolError, type ToolProvider } from "./tool.ts";

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

  /** A call to one of them, or to a tool of a server that failed; an `mcp_call` item records it. */
  tool(name: string): Tool<string> | undefined {
    const tool = this.#set.lookup(name);
    const failure = tool ? undefined : this.#failureOf(name);
    if (!tool && !failure) return undefined;
    const serverLabel = tool?.serverLabel ?? failure!.serverLabel;
    const set = this.#set;
    return {
      prepare: (call) => call.arguments,
      item: {
        at: "call",
        fields: (call) => ({
          type: "mcp_call",
          server_label: serverLabel,
          name: tool?.toolName ?? call.name,
          arguments: recordedArguments(call.arguments),
          output: null,
          error: null,
        }),
        answerIn: "error",
      },
      run: async (args, context) => {
        context.attributes["mcp.server_label"] = serverLabel;
        if (failure) throw new ToolError(failure.error.code, failure.error.message);
        // Rejects only when the turn is cancelled; the server's own failure is an error result.
        const result = await set.call(name, args, context.signal);
        if (!result.isError) return { output: result.output, record: { output: result.output } };
        return {
          output: toolError("mcp_tool_error", result.output),
          status: "failed",
          record: { error: result.output },
        };
      },
    };
  }

  #failureOf(name: string): McpServerFailure | undefined {
    return this.#set.failures.find((f) => name.startsWith(prefixOf(f.serverLabel)));
  }
}
