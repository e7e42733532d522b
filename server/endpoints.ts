/**
 * The endpoint table: every route the server answers, as data.
 *
 * One fact, one place. Routing (`server/app.ts`), the capabilities document, the policy's
 * endpoint rule, the SDK's `ENDPOINT_METHODS` coverage test and the README's endpoint list are
 * all derived from this table; nothing else names a path. This module imports nothing from Hono
 * so that the SDK and the docs can read it without pulling in the server.
 *
 * Paths follow what users of E2B's envd and Daytona's toolbox expect: resources under `/files`,
 * `/process`, `/pty`, `/system`, `/git`, `/code`, `/browser`; path parameters in Hono's `:name`
 * form; locations of files and directories travel in the `path` query parameter (GET, DELETE) or
 * in the JSON body (POST).
 *
 * @module
 */

/** The nine endpoint groups. A group name is an alias for its endpoint ids in the policy. */
export type EndpointGroup =
  | "core"
  | "commands"
  | "file_ops"
  | "process"
  | "terminal"
  | "system"
  | "dev_tools"
  | "browser"
  | "agents";

/** The HTTP methods the table uses. */
export type EndpointMethod = "GET" | "POST" | "PUT" | "DELETE";

/** Default admission limits of an endpoint; the policy's `endpoints.<id>.limits` overrides them. */
export interface EndpointLimits {
  /** Requests per minute, per identity. */
  rate_per_minute?: number;
  /** Requests in flight at once, per identity. */
  concurrency?: number;
  /** Largest request body in bytes; the policy's `limits.body_bytes` applies when absent. */
  body_bytes?: number;
}

/** One row of the endpoint table. */
export interface EndpointSpec {
  /** The id used by the policy, the audit log, `GET /capabilities` and the client. */
  id: EndpointId;
  /** HTTP method. `pty_connect` is a `GET` upgraded to a WebSocket. */
  method: EndpointMethod;
  /** Route path with Hono-style `:param` segments. */
  path: string;
  /** The group the endpoint belongs to. */
  group: EndpointGroup;
  /** Scopes the caller's identity must hold; empty means any authenticated caller. */
  scopes: readonly string[];
  /** True when the group is off unless the policy or its environment switch turns it on. */
  optIn: boolean;
  /** The port the route is served on: 9000 for HTTP, 9001 for the PTY WebSocket. */
  port: "http" | "pty";
  /** Default limits; see {@linkcode EndpointLimits}. */
  limits: EndpointLimits;
  /** True when the endpoint skips authentication (only `health`). */
  public?: boolean;
  /** One line for the docs and the capabilities document. */
  summary: string;
}

/** Groups that are off unless switched on (`default:opt-in:<group>`). */
export const OPT_IN_GROUPS: readonly EndpointGroup[] = ["browser", "agents"];

/** The number of endpoints each group must have; the table is checked against it at load. */
export const GROUP_SIZES: Readonly<Record<EndpointGroup, number>> = {
  core: 3,
  commands: 2,
  file_ops: 12,
  process: 8,
  terminal: 6,
  system: 6,
  dev_tools: 3,
  browser: 8,
  agents: 70,
};

const GiB = 1024 * 1024 * 1024;

/** Uploads to `POST /v1/files` are streamed to disk, so they may be larger than a JSON body. */
const FILE_UPLOAD_LIMIT = { body_bytes: 512 * 1024 * 1024 };

type Row<Id extends string = string> = readonly [
  id: Id,
  method: EndpointMethod,
  path: string,
  scopes: readonly string[],
  summary: string,
  limits?: EndpointLimits,
];

/**
 * The table's rows by group, the agents group's 70 `/v1/` rows with the rest: id, method, path,
 * scopes, summary and default limits. Declared `as const` so every id is a literal type: the
 * handler maps are typed by them, and a misspelled or missing handler fails the type check
 * instead of answering unimplemented. {@linkcode ENDPOINTS} is the expanded form.
 */
export const ENDPOINT_ROWS = {
  core: [
    ["health", "GET", "/health", [], "Whether the server is up; needs no token"],
    ["capabilities", "GET", "/capabilities", [], "The capabilities document for the caller"],
    [
      "capabilities_check",
      "POST",
      "/capabilities/check",
      [],
      "Would this endpoint (and path, operation) be allowed? Nothing is run",
    ],
  ],
  commands: [
    ["commands_list", "GET", "/commands", ["commands:read"], "Named commands with their args"],
    ["commands_run", "POST", "/commands/:name", ["commands:run"], "Run a named command"],
  ],
  file_ops: [
    ["files_list", "GET", "/files/list", ["files:read"], "List a directory"],
    ["files_stat", "GET", "/files/stat", ["files:read"], "Metadata of one path"],
    ["files_mkdir", "POST", "/files/mkdir", ["files:write"], "Create a directory and parents"],
    ["files_delete", "DELETE", "/files", ["files:write"], "Delete a file or directory"],
    ["files_move", "POST", "/files/move", ["files:write"], "Move or rename"],
    ["files_search", "POST", "/files/search", ["files:read"], "Search by name glob or content"],
    ["files_archive", "GET", "/files/archive", ["files:read"], "A directory as a tar.gz stream"],
    ["files_watch", "GET", "/files/watch", ["files:read"], "Stream of change events"],
    ["files_upload", "POST", "/files", ["files:write"], "Upload (raw or multipart)", {
      body_bytes: 8 * GiB,
    }],
    ["files_download", "GET", "/files", ["files:read"], "Download, with Range"],
    ["files_upload_legacy", "POST", "/upload", ["files:write"], "Legacy multipart upload", {
      body_bytes: 8 * GiB,
    }],
    ["files_download_legacy", "GET", "/download", ["files:read"], "Legacy download"],
  ],
  process: [
    ["shell", "POST", "/process/shell", ["process:run"], "Run a shell command and wait"],
    ["shell_stream", "POST", "/process/shell/stream", ["process:run"], "Run, streaming output"],
    ["process_start", "POST", "/process/start", ["process:run"], "Start in the background"],
    ["process_list", "GET", "/process", ["process:read"], "Processes started here"],
    ["process_get", "GET", "/process/:pid", ["process:read"], "One process, optionally waiting"],
    ["process_signal", "POST", "/process/:pid/signal", ["process:run"], "Signal a process group"],
    ["process_stdin", "POST", "/process/:pid/stdin", ["process:run"], "Write or close stdin"],
    ["process_output", "GET", "/process/:pid/output", ["process:read"], "Buffered output, follow"],
  ],
  terminal: [
    ["pty_create", "POST", "/pty", ["terminal:use"], "Open a pseudo-terminal"],
    ["pty_list", "GET", "/pty", ["terminal:use"], "Open terminals"],
    ["pty_get", "GET", "/pty/:id", ["terminal:use"], "One terminal"],
    ["pty_resize", "POST", "/pty/:id/resize", ["terminal:use"], "Resize a terminal"],
    ["pty_delete", "DELETE", "/pty/:id", ["terminal:use"], "Close a terminal"],
    ["pty_connect", "GET", "/pty/:id/connect", ["terminal:use"], "WebSocket on the PTY port"],
  ],
  system: [
    ["system_info", "GET", "/system/info", ["system:read"], "OS, CPUs, memory, versions"],
    ["system_metrics", "GET", "/system/metrics", ["system:read"], "CPU, memory, disk, load"],
    ["system_env", "GET", "/system/env", ["system:read"], "Environment of new processes"],
    ["system_set_env", "POST", "/system/env", ["system:write"], "Set environment variables"],
    ["system_ports", "GET", "/system/ports", ["system:read"], "Listening TCP ports"],
    ["system_packages", "GET", "/system/packages", ["system:read"], "Installed packages"],
  ],
  dev_tools: [
    ["run_code", "POST", "/code/run", ["code:run"], "Run python, javascript, typescript, bash"],
    ["git_status", "GET", "/git/status", ["git:read"], "git status of a repository"],
    ["git_diff", "GET", "/git/diff", ["git:read"], "git diff of a repository"],
  ],
  browser: [
    ["browser_navigate", "POST", "/browser/navigate", ["browser:use"], "Go to a URL"],
    ["browser_screenshot", "POST", "/browser/screenshot", ["browser:use"], "PNG of the page"],
    ["browser_content", "GET", "/browser/content", ["browser:use"], "HTML and text of the page"],
    ["browser_click", "POST", "/browser/click", ["browser:use"], "Click a selector"],
    ["browser_type", "POST", "/browser/type", ["browser:use"], "Type into a selector"],
    ["browser_evaluate", "POST", "/browser/evaluate", ["browser:use"], "Evaluate a script"],
    ["browser_pdf", "POST", "/browser/pdf", ["browser:use"], "PDF of the page"],
    ["browser_console", "GET", "/browser/console", ["browser:use"], "Console since last call"],
  ],
  agents: [
    ["agents_create", "POST", "/v1/agents", ["agents:write"], "OpenAI Agents API: POST /v1/agents"],
    [
      "agents_retrieve",
      "GET",
      "/v1/agents/:agent_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/:agent_id",
    ],
    [
      "agents_update",
      "POST",
      "/v1/agents/:agent_id",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/:agent_id",
    ],
    ["agents_list", "GET", "/v1/agents", ["agents:read"], "OpenAI Agents API: GET /v1/agents"],
    [
      "agents_delete",
      "DELETE",
      "/v1/agents/:agent_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/agents/:agent_id",
    ],
    [
      "agents_sessions_create",
      "POST",
      "/v1/agents/sessions",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/sessions",
    ],
    [
      "agents_sessions_retrieve",
      "GET",
      "/v1/agents/sessions/:session_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id",
    ],
    [
      "agents_sessions_update",
      "POST",
      "/v1/agents/sessions/:session_id",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/sessions/:session_id",
    ],
    [
      "agents_sessions_list",
      "GET",
      "/v1/agents/sessions",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions",
    ],
    [
      "agents_sessions_delete",
      "DELETE",
      "/v1/agents/sessions/:session_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/agents/sessions/:session_id",
    ],
    ["agents_sessions_events_create", "POST", "/v1/agents/sessions/:session_id/events", [
      "agents:write",
    ], "OpenAI Agents API: POST /v1/agents/sessions/:session_id/events"],
    ["agents_sessions_events_stream", "GET", "/v1/agents/sessions/:session_id/events", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/sessions/:session_id/events"],
    [
      "agents_sessions_items_list",
      "GET",
      "/v1/agents/sessions/:session_id/items",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/items",
    ],
    [
      "agents_sessions_turns_list",
      "GET",
      "/v1/agents/sessions/:session_id/turns",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/turns",
    ],
    ["agents_sessions_turns_retrieve", "GET", "/v1/agents/sessions/:session_id/turns/:turn_id", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/sessions/:session_id/turns/:turn_id"],
    [
      "agents_sessions_turns_items_list",
      "GET",
      "/v1/agents/sessions/:session_id/turns/:turn_id/items",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/turns/:turn_id/items",
    ],
    ["agents_sessions_subagents_list", "GET", "/v1/agents/sessions/:session_id/subagents", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/sessions/:session_id/subagents"],
    [
      "agents_sessions_subagents_retrieve",
      "GET",
      "/v1/agents/sessions/:session_id/subagents/:subagent_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/subagents/:subagent_id",
    ],
    [
      "agents_sessions_subagents_items_list",
      "GET",
      "/v1/agents/sessions/:session_id/subagents/:subagent_id/items",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/subagents/:subagent_id/items",
    ],
    [
      "agents_sessions_subagents_turns_list",
      "GET",
      "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/subagents/:subagent_id/turns",
    ],
    [
      "agents_sessions_subagents_turns_retrieve",
      "GET",
      "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id",
    ],
    [
      "agents_sessions_subagents_turns_items_list",
      "GET",
      "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id/items",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id/items",
    ],
    ["agents_sessions_traces_list", "GET", "/v1/agents/sessions/:session_id/traces", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/sessions/:session_id/traces"],
    ["agents_sessions_artifacts_list", "GET", "/v1/agents/sessions/:session_id/artifacts", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/sessions/:session_id/artifacts"],
    [
      "agents_sessions_artifacts_retrieve",
      "GET",
      "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/artifacts/:artifact_id",
    ],
    [
      "agents_sessions_artifacts_delete",
      "DELETE",
      "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/agents/sessions/:session_id/artifacts/:artifact_id",
    ],
    [
      "agents_sessions_artifacts_content",
      "GET",
      "/v1/agents/sessions/:session_id/artifacts/:artifact_id/content",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/sessions/:session_id/artifacts/:artifact_id/content",
    ],
    [
      "agents_environments_create",
      "POST",
      "/v1/agents/environments",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/environments",
    ],
    ["agents_environments_retrieve", "GET", "/v1/agents/environments/:environment_id", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/environments/:environment_id"],
    [
      "agents_environments_list",
      "GET",
      "/v1/agents/environments",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/environments",
    ],
    ["agents_environments_files_create", "POST", "/v1/agents/environments/:environment_id/files", [
      "agents:write",
    ], "OpenAI Agents API: POST /v1/agents/environments/:environment_id/files"],
    ["agents_environments_files_list", "GET", "/v1/agents/environments/:environment_id/files", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/environments/:environment_id/files"],
    ["agents_environments_templates_create", "POST", "/v1/agents/environments/templates", [
      "agents:write",
    ], "OpenAI Agents API: POST /v1/agents/environments/templates"],
    [
      "agents_environments_templates_retrieve",
      "GET",
      "/v1/agents/environments/templates/:environment_template_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/environments/templates/:environment_template_id",
    ],
    [
      "agents_environments_templates_update",
      "POST",
      "/v1/agents/environments/templates/:environment_template_id",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/environments/templates/:environment_template_id",
    ],
    ["agents_environments_templates_list", "GET", "/v1/agents/environments/templates", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/agents/environments/templates"],
    [
      "agents_environments_templates_delete",
      "DELETE",
      "/v1/agents/environments/templates/:environment_template_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/agents/environments/templates/:environment_template_id",
    ],
    [
      "agents_automations_create",
      "POST",
      "/v1/agents/automations",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/automations",
    ],
    [
      "agents_automations_retrieve",
      "GET",
      "/v1/agents/automations/:automation_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/automations/:automation_id",
    ],
    [
      "agents_automations_update",
      "POST",
      "/v1/agents/automations/:automation_id",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/automations/:automation_id",
    ],
    [
      "agents_automations_list",
      "GET",
      "/v1/agents/automations",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/automations",
    ],
    ["agents_automations_delete", "DELETE", "/v1/agents/automations/:automation_id", [
      "agents:write",
    ], "OpenAI Agents API: DELETE /v1/agents/automations/:automation_id"],
    ["agents_automations_pause", "POST", "/v1/agents/automations/:automation_id/pause", [
      "agents:write",
    ], "OpenAI Agents API: POST /v1/agents/automations/:automation_id/pause"],
    ["agents_automations_resume", "POST", "/v1/agents/automations/:automation_id/resume", [
      "agents:write",
    ], "OpenAI Agents API: POST /v1/agents/automations/:automation_id/resume"],
    [
      "agents_automations_invocations_create",
      "POST",
      "/v1/agents/automations/:automation_id/invocations",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/agents/automations/:automation_id/invocations",
    ],
    [
      "agents_automations_invocations_retrieve",
      "GET",
      "/v1/agents/automations/:automation_id/invocations/:invocation_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/automations/:automation_id/invocations/:invocation_id",
    ],
    [
      "agents_automations_invocations_list",
      "GET",
      "/v1/agents/automations/:automation_id/invocations",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/agents/automations/:automation_id/invocations",
    ],
    [
      "agents_vaults_create",
      "POST",
      "/v1/vaults",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/vaults",
    ],
    [
      "agents_vaults_retrieve",
      "GET",
      "/v1/vaults/:vault_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/vaults/:vault_id",
    ],
    [
      "agents_vaults_update",
      "POST",
      "/v1/vaults/:vault_id",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/vaults/:vault_id",
    ],
    [
      "agents_vaults_list",
      "GET",
      "/v1/vaults",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/vaults",
    ],
    [
      "agents_vaults_delete",
      "DELETE",
      "/v1/vaults/:vault_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/vaults/:vault_id",
    ],
    ["agents_vaults_credentials_create", "POST", "/v1/vaults/:vault_id/credentials", [
      "agents:write",
    ], "OpenAI Agents API: POST /v1/vaults/:vault_id/credentials"],
    [
      "agents_vaults_credentials_retrieve",
      "GET",
      "/v1/vaults/:vault_id/credentials/:credential_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/vaults/:vault_id/credentials/:credential_id",
    ],
    [
      "agents_vaults_credentials_update",
      "POST",
      "/v1/vaults/:vault_id/credentials/:credential_id",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/vaults/:vault_id/credentials/:credential_id",
    ],
    [
      "agents_vaults_credentials_list",
      "GET",
      "/v1/vaults/:vault_id/credentials",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/vaults/:vault_id/credentials",
    ],
    [
      "agents_vaults_credentials_delete",
      "DELETE",
      "/v1/vaults/:vault_id/credentials/:credential_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/vaults/:vault_id/credentials/:credential_id",
    ],
    [
      "agents_models_list",
      "GET",
      "/v1/models",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/models",
    ],
    [
      "agents_models_retrieve",
      "GET",
      "/v1/models/:model",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/models/:model",
    ],
    [
      "agents_responses_create",
      "POST",
      "/v1/responses",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/responses",
    ],
    [
      "agents_responses_retrieve",
      "GET",
      "/v1/responses/:response_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/responses/:response_id",
    ],
    [
      "agents_responses_delete",
      "DELETE",
      "/v1/responses/:response_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/responses/:response_id",
    ],
    [
      "agents_responses_cancel",
      "POST",
      "/v1/responses/:response_id/cancel",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/responses/:response_id/cancel",
    ],
    ["agents_responses_input_items_list", "GET", "/v1/responses/:response_id/input_items", [
      "agents:read",
    ], "OpenAI Agents API: GET /v1/responses/:response_id/input_items"],
    [
      "agents_responses_input_tokens_count",
      "POST",
      "/v1/responses/input_tokens",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/responses/input_tokens",
    ],
    [
      "agents_files_create",
      "POST",
      "/v1/files",
      ["agents:write"],
      "OpenAI Agents API: POST /v1/files",
      FILE_UPLOAD_LIMIT,
    ],
    ["agents_files_list", "GET", "/v1/files", ["agents:read"], "OpenAI Agents API: GET /v1/files"],
    [
      "agents_files_retrieve",
      "GET",
      "/v1/files/:file_id",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/files/:file_id",
    ],
    [
      "agents_files_content",
      "GET",
      "/v1/files/:file_id/content",
      ["agents:read"],
      "OpenAI Agents API: GET /v1/files/:file_id/content",
    ],
    [
      "agents_files_delete",
      "DELETE",
      "/v1/files/:file_id",
      ["agents:write"],
      "OpenAI Agents API: DELETE /v1/files/:file_id",
    ],
  ],
} as const satisfies Readonly<Record<EndpointGroup, readonly Row[]>>;

/** The ids of one group of the table. */
export type GroupId<G extends EndpointGroup> = (typeof ENDPOINT_ROWS)[G][number][0];
/** The core group's endpoint ids. */
export type CoreId = GroupId<"core">;
/** The commands group's endpoint ids. */
export type CommandsId = GroupId<"commands">;
/** The file_ops group's endpoint ids. */
export type FileOpsId = GroupId<"file_ops">;
/** The process group's endpoint ids. */
export type ProcessId = GroupId<"process">;
/** The terminal group's endpoint ids. */
export type TerminalId = GroupId<"terminal">;
/** The system group's endpoint ids. */
export type SystemId = GroupId<"system">;
/** The dev_tools group's endpoint ids. */
export type DevToolsId = GroupId<"dev_tools">;
/** The browser group's endpoint ids. */
export type BrowserId = GroupId<"browser">;

/**
 * The agents group's endpoint ids. Every one carries the `agents_` prefix so that
 * `agents_files_list` can never be mistaken for the file_ops group's `files_list`.
 */
export type AgentsId = GroupId<"agents">;

/** Every endpoint id of the table. */
export type EndpointId = GroupId<EndpointGroup>;

function expand(): EndpointSpec[] {
  const specs: EndpointSpec[] = [];
  const groups = Object.entries(ENDPOINT_ROWS) as [EndpointGroup, readonly Row<EndpointId>[]][];
  for (const [group, rows] of groups) {
    for (const [id, method, path, scopes, summary, limits] of rows) {
      specs.push({
        id,
        method,
        path,
        group,
        scopes,
        summary,
        optIn: OPT_IN_GROUPS.includes(group),
        port: id === "pty_connect" ? "pty" : "http",
        limits: limits ?? {},
        ...(id === "health" ? { public: true } : {}),
      });
    }
  }
  return specs;
}

/**
 * Every endpoint, in table order.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { ENDPOINTS } from "./endpoints.ts";
 * assert.equal(new Set(ENDPOINTS.map((e) => e.id)).size, ENDPOINTS.length); // ids are unique
 * assert.ok(ENDPOINTS.some((e) => e.id === "health" && e.method === "GET"));
 * ```
 */
export const ENDPOINTS: readonly EndpointSpec[] = expand();

/**
 * Endpoints by id.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { ENDPOINTS_BY_ID } from "./endpoints.ts";
 * assert.equal(ENDPOINTS_BY_ID.get("shell")?.path, "/process/shell");
 * assert.equal(ENDPOINTS_BY_ID.get("no_such_id"), undefined);
 * ```
 */
export const ENDPOINTS_BY_ID: ReadonlyMap<string, EndpointSpec> = new Map(
  ENDPOINTS.map((e) => [e.id, e]),
);

/**
 * Group name to its endpoint ids; a group name in the policy stands for these.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { GROUPS } from "./endpoints.ts";
 * assert.ok(GROUPS.get("terminal")?.includes("pty_connect"));
 * assert.ok(!GROUPS.get("core")?.includes("pty_connect"));
 * ```
 */
export const GROUPS: ReadonlyMap<EndpointGroup, readonly string[]> = (() => {
  const groups = new Map<EndpointGroup, string[]>();
  for (const e of ENDPOINTS) {
    const ids = groups.get(e.group) ?? [];
    ids.push(e.id);
    groups.set(e.group, ids);
  }
  for (const [group, size] of Object.entries(GROUP_SIZES)) {
    const got = groups.get(group as EndpointGroup)?.length ?? 0;
    if (got !== size) {
      throw new Error(`endpoint table: group ${group} has ${got}, expected ${size}`);
    }
  }
  return groups;
})();
