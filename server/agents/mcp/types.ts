/**
 * What the agent runtime sees of MCP tools: an agent's `mcp` tool entries go in, a
 * {@linkcode McpToolSet} comes out, offering the servers' tools to the model under names that
 * cannot clash with the runtime's own tools, calling them, and closing every connection (and
 * killing every stdio server's process group) at the end of the session.
 *
 * The one entry point is `openMcpTools` in `tool_set.ts`.
 *
 * @module
 */

import type { Identity } from "../../policy/compile.ts";
import type { ServerState } from "../../state.ts";
import type { AgentsCore } from "../core.ts";
import type { AgentCreate } from "../schemas/agents.ts";
import type { McpServerError } from "./errors.ts";

/** One `{type: "mcp", …}` entry of an agent's `tools`, as the agents schema validated it. */
export type McpToolConfig = Extract<NonNullable<AgentCreate["tools"]>[number], { type: "mcp" }>;

/**
 * Who is running the tools and where: the guards of the server's policy apply to what the
 * identity may do (command, env and path guards for stdio servers, the URL guard for http
 * ones), and the session decides the workspace, the environment and the vaults.
 */
export interface McpContext {
  /** The running server's state (policy, process table). */
  state: ServerState;
  /** The agents group's store and secret box (credentials are read and refreshed there). */
  core: AgentsCore;
  /** The identity that owns the session; its scopes are checked (`process:run` for stdio). */
  identity: Identity;
  /**
   * The host directory that stands for `/workspace` (the session's environment). A stdio
   * transport's `cwd` of `/workspace/…` is taken inside it; any other `cwd` is a host path.
   * Every `cwd` passes the path guard either way.
   */
  workspace?: string;
  /**
   * Variables for stdio servers on top of the server's environment store (the environment's
   * `env` and the session's vault variables, as the runtime gives its shell commands). They
   * pass the environment guard.
   */
  env?: Record<string, string>;
  /**
   * An argv prefix every stdio server runs under (`["unshare", "--net", "--"]` for an
   * environment whose network is disabled), as the environment's own commands do.
   */
  argvPrefix?: readonly string[];
  /** The environment's virtual environment, first on a stdio server's `PATH`, or null. */
  venv?: string | null;
  /**
   * The session's vaults: a `credential_id` must name a credential in one of them. Undefined
   * means any vault of the store.
   */
  vaultIds?: readonly string[];
  /**
   * Names the model already has (function tools, the shell and patch tools): an MCP tool name
   * that would equal one gets a suffix instead.
   */
  reservedNames?: Iterable<string>;
  /** How long a server may take to start and answer `initialize` and `tools/list`; default 30 s. */
  startTimeoutMs?: number;
  /** How long one tool call may take; default 5 minutes (a progress report restarts the clock). */
  callTimeoutMs?: number;
}

/** A tool offered to the model. */
export interface McpTool {
  /**
   * The name the model calls: `<server_label>__<tool>`, each part reduced to `[A-Za-z0-9_-]`
   * and the whole to 64 characters (see `tool_names.ts`). Unique within the set.
   */
  name: string;
  /** The tool's description as the server gives it (empty when it gives none). */
  description: string;
  /** The tool's input JSON Schema as the server gives it (always an `object` schema). */
  parameters: Record<string, unknown>;
  /** The `server_label` of the agent's tool entry: what an `mcp_call` item records. */
  serverLabel: string;
  /** The tool's own name on its server: what an `mcp_call` item records as `name`. */
  toolName: string;
}

/** What a tool call came to, ready for the model (and for an `mcp_call` item). */
export interface McpCallResult {
  /**
   * The result's content as text: text parts joined by newlines, other parts described in
   * brackets, `structuredContent` as JSON when there is no content. For an error, what went
   * wrong (the server's message, or why the server could not be reached).
   */
  output: string;
  /** The server said the call failed, or the call could not be made. */
  isError: boolean;
}

/** A server that could not be used; its tools are missing from the set. */
export interface McpServerFailure {
  /** The agent's `server_label`. */
  serverLabel: string;
  /** The refusal or failure (code, message; never a secret). */
  error: McpServerError;
}

/**
 * The MCP tools of one session, from every `mcp` entry of the agent.
 */
export interface McpToolSet {
  /** The tools to offer the model, in the order of the agent's entries and the servers' lists. */
  readonly tools: readonly McpTool[];
  /**
   * Servers that are not `required` and failed to start, connect or list their tools. The
   * runtime tells the model (for example in the instructions), rather than failing the turn.
   */
  readonly failures: readonly McpServerFailure[];
  /** The tool of a name in {@linkcode tools}, or undefined (not an MCP tool). */
  lookup(name: string): McpTool | undefined;
  /**
   * Call a tool by its set name with the model's arguments (an object, or its JSON text).
   * Never rejects for what the server or the connection did: that is `isError: true` with the
   * reason in `output`. Rejects only when `signal` aborts (with the signal's reason), and when
   * the set is closed.
   */
  call(name: string, args: unknown, signal?: AbortSignal): Promise<McpCallResult>;
  /**
   * Close every connection; each stdio server's whole process group is killed and reaped
   * before this resolves. Idempotent.
   */
  close(): Promise<void>;
}
