/**
 * The 70 endpoints of the `agents` group, all under `/v1/`: the 57 operations the official
 * `openai` client makes through `client.beta.agents.*`, plus `models` (2), `responses` (6) and
 * `files` (5). Every id carries the `agents_` prefix so that `agents_files_list` can never be
 * mistaken for the file_ops group's `files_list`.
 *
 * @module
 */

/** One row: endpoint id, HTTP method, path (Hono-style `:param`), and a body limit if its own. */
export type AgentsRow = readonly [
  id: string,
  method: "GET" | "POST" | "DELETE",
  path: string,
  limits?: { body_bytes: number },
];

/** Uploads to `POST /v1/files` are streamed to disk, so they may be larger than a JSON body. */
const FILE_UPLOAD_LIMIT = { body_bytes: 512 * 1024 * 1024 };

/**
 * The agents group, as rows, `as const` so that {@linkcode AgentsId} lists the ids.
 * `server/endpoints.ts` expands them into endpoint specs.
 */
export const AGENTS_ROWS = [
  ["agents_create", "POST", "/v1/agents"],
  ["agents_retrieve", "GET", "/v1/agents/:agent_id"],
  ["agents_update", "POST", "/v1/agents/:agent_id"],
  ["agents_list", "GET", "/v1/agents"],
  ["agents_delete", "DELETE", "/v1/agents/:agent_id"],
  ["agents_sessions_create", "POST", "/v1/agents/sessions"],
  ["agents_sessions_retrieve", "GET", "/v1/agents/sessions/:session_id"],
  ["agents_sessions_update", "POST", "/v1/agents/sessions/:session_id"],
  ["agents_sessions_list", "GET", "/v1/agents/sessions"],
  ["agents_sessions_delete", "DELETE", "/v1/agents/sessions/:session_id"],
  ["agents_sessions_events_create", "POST", "/v1/agents/sessions/:session_id/events"],
  ["agents_sessions_events_stream", "GET", "/v1/agents/sessions/:session_id/events"],
  ["agents_sessions_items_list", "GET", "/v1/agents/sessions/:session_id/items"],
  ["agents_sessions_turns_list", "GET", "/v1/agents/sessions/:session_id/turns"],
  ["agents_sessions_turns_retrieve", "GET", "/v1/agents/sessions/:session_id/turns/:turn_id"],
  [
    "agents_sessions_turns_items_list",
    "GET",
    "/v1/agents/sessions/:session_id/turns/:turn_id/items",
  ],
  ["agents_sessions_subagents_list", "GET", "/v1/agents/sessions/:session_id/subagents"],
  [
    "agents_sessions_subagents_retrieve",
    "GET",
    "/v1/agents/sessions/:session_id/subagents/:subagent_id",
  ],
  [
    "agents_sessions_subagents_items_list",
    "GET",
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/items",
  ],
  [
    "agents_sessions_subagents_turns_list",
    "GET",
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns",
  ],
  [
    "agents_sessions_subagents_turns_retrieve",
    "GET",
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id",
  ],
  [
    "agents_sessions_subagents_turns_items_list",
    "GET",
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id/items",
  ],
  ["agents_sessions_traces_list", "GET", "/v1/agents/sessions/:session_id/traces"],
  ["agents_sessions_artifacts_list", "GET", "/v1/agents/sessions/:session_id/artifacts"],
  [
    "agents_sessions_artifacts_retrieve",
    "GET",
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
  ],
  [
    "agents_sessions_artifacts_delete",
    "DELETE",
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
  ],
  [
    "agents_sessions_artifacts_content",
    "GET",
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id/content",
  ],
  ["agents_environments_create", "POST", "/v1/agents/environments"],
  ["agents_environments_retrieve", "GET", "/v1/agents/environments/:environment_id"],
  ["agents_environments_list", "GET", "/v1/agents/environments"],
  ["agents_environments_files_create", "POST", "/v1/agents/environments/:environment_id/files"],
  ["agents_environments_files_list", "GET", "/v1/agents/environments/:environment_id/files"],
  ["agents_environments_templates_create", "POST", "/v1/agents/environments/templates"],
  [
    "agents_environments_templates_retrieve",
    "GET",
    "/v1/agents/environments/templates/:environment_template_id",
  ],
  [
    "agents_environments_templates_update",
    "POST",
    "/v1/agents/environments/templates/:environment_template_id",
  ],
  ["agents_environments_templates_list", "GET", "/v1/agents/environments/templates"],
  [
    "agents_environments_templates_delete",
    "DELETE",
    "/v1/agents/environments/templates/:environment_template_id",
  ],
  ["agents_automations_create", "POST", "/v1/agents/automations"],
  ["agents_automations_retrieve", "GET", "/v1/agents/automations/:automation_id"],
  ["agents_automations_update", "POST", "/v1/agents/automations/:automation_id"],
  ["agents_automations_list", "GET", "/v1/agents/automations"],
  ["agents_automations_delete", "DELETE", "/v1/agents/automations/:automation_id"],
  ["agents_automations_pause", "POST", "/v1/agents/automations/:automation_id/pause"],
  ["agents_automations_resume", "POST", "/v1/agents/automations/:automation_id/resume"],
  [
    "agents_automations_invocations_create",
    "POST",
    "/v1/agents/automations/:automation_id/invocations",
  ],
  [
    "agents_automations_invocations_retrieve",
    "GET",
    "/v1/agents/automations/:automation_id/invocations/:invocation_id",
  ],
  [
    "agents_automations_invocations_list",
    "GET",
    "/v1/agents/automations/:automation_id/invocations",
  ],
  ["agents_vaults_create", "POST", "/v1/vaults"],
  ["agents_vaults_retrieve", "GET", "/v1/vaults/:vault_id"],
  ["agents_vaults_update", "POST", "/v1/vaults/:vault_id"],
  ["agents_vaults_list", "GET", "/v1/vaults"],
  ["agents_vaults_delete", "DELETE", "/v1/vaults/:vault_id"],
  ["agents_vaults_credentials_create", "POST", "/v1/vaults/:vault_id/credentials"],
  ["agents_vaults_credentials_retrieve", "GET", "/v1/vaults/:vault_id/credentials/:credential_id"],
  ["agents_vaults_credentials_update", "POST", "/v1/vaults/:vault_id/credentials/:credential_id"],
  ["agents_vaults_credentials_list", "GET", "/v1/vaults/:vault_id/credentials"],
  ["agents_vaults_credentials_delete", "DELETE", "/v1/vaults/:vault_id/credentials/:credential_id"],
  ["agents_models_list", "GET", "/v1/models"],
  ["agents_models_retrieve", "GET", "/v1/models/:model"],
  ["agents_responses_create", "POST", "/v1/responses"],
  ["agents_responses_retrieve", "GET", "/v1/responses/:response_id"],
  ["agents_responses_delete", "DELETE", "/v1/responses/:response_id"],
  ["agents_responses_cancel", "POST", "/v1/responses/:response_id/cancel"],
  ["agents_responses_input_items_list", "GET", "/v1/responses/:response_id/input_items"],
  ["agents_responses_input_tokens_count", "POST", "/v1/responses/input_tokens"],
  ["agents_files_create", "POST", "/v1/files", FILE_UPLOAD_LIMIT],
  ["agents_files_list", "GET", "/v1/files"],
  ["agents_files_retrieve", "GET", "/v1/files/:file_id"],
  ["agents_files_content", "GET", "/v1/files/:file_id/content"],
  ["agents_files_delete", "DELETE", "/v1/files/:file_id"],
] as const satisfies readonly AgentsRow[];

/** The agents group's endpoint ids. */
export type AgentsId = (typeof AGENTS_ROWS)[number][0];
