/**
 * The client's copy of the server's routes: endpoint id → `"METHOD /path"`. The SDK does
 * not import the server at run time (a browser or edge bundle of the client must not pull in
 * Hono, zod and the policy engine), so the routes are written here as data, generated from
 * the server's endpoint table by `scripts/generate_endpoint_files.ts`; do not edit by hand.
 *
 * @module
 */

/**
 * Endpoint id → `"METHOD /path"` with `:param` segments.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ROUTES } from "./routes.ts";
 * assert.equal(ROUTES.files_download, "GET /files");
 * ```
 */
export const ROUTES: Readonly<Record<string, string>> = {
  health: "GET /health",
  capabilities: "GET /capabilities",
  capabilities_check: "POST /capabilities/check",
  commands_list: "GET /commands",
  commands_run: "POST /commands/:name",
  files_list: "GET /files/list",
  files_stat: "GET /files/stat",
  files_mkdir: "POST /files/mkdir",
  files_delete: "DELETE /files",
  files_move: "POST /files/move",
  files_search: "POST /files/search",
  files_archive: "GET /files/archive",
  files_watch: "GET /files/watch",
  files_upload: "POST /files",
  files_download: "GET /files",
  files_upload_legacy: "POST /upload",
  files_download_legacy: "GET /download",
  shell: "POST /process/shell",
  shell_stream: "POST /process/shell/stream",
  process_start: "POST /process/start",
  process_list: "GET /process",
  process_get: "GET /process/:pid",
  process_signal: "POST /process/:pid/signal",
  process_stdin: "POST /process/:pid/stdin",
  process_output: "GET /process/:pid/output",
  pty_create: "POST /pty",
  pty_list: "GET /pty",
  pty_get: "GET /pty/:id",
  pty_resize: "POST /pty/:id/resize",
  pty_delete: "DELETE /pty/:id",
  pty_connect: "GET /pty/:id/connect",
  system_info: "GET /system/info",
  system_metrics: "GET /system/metrics",
  system_env: "GET /system/env",
  system_set_env: "POST /system/env",
  system_ports: "GET /system/ports",
  system_packages: "GET /system/packages",
  run_code: "POST /code/run",
  git_status: "GET /git/status",
  git_diff: "GET /git/diff",
  browser_navigate: "POST /browser/navigate",
  browser_screenshot: "POST /browser/screenshot",
  browser_content: "GET /browser/content",
  browser_click: "POST /browser/click",
  browser_type: "POST /browser/type",
  browser_evaluate: "POST /browser/evaluate",
  browser_pdf: "POST /browser/pdf",
  browser_console: "GET /browser/console",
  agents_create: "POST /v1/agents",
  agents_retrieve: "GET /v1/agents/:agent_id",
  agents_update: "POST /v1/agents/:agent_id",
  agents_list: "GET /v1/agents",
  agents_delete: "DELETE /v1/agents/:agent_id",
  agents_sessions_create: "POST /v1/agents/sessions",
  agents_sessions_retrieve: "GET /v1/agents/sessions/:session_id",
  agents_sessions_update: "POST /v1/agents/sessions/:session_id",
  agents_sessions_list: "GET /v1/agents/sessions",
  agents_sessions_delete: "DELETE /v1/agents/sessions/:session_id",
  agents_sessions_events_create: "POST /v1/agents/sessions/:session_id/events",
  agents_sessions_events_stream: "GET /v1/agents/sessions/:session_id/events",
  agents_sessions_items_list: "GET /v1/agents/sessions/:session_id/items",
  agents_sessions_turns_list: "GET /v1/agents/sessions/:session_id/turns",
  agents_sessions_turns_retrieve: "GET /v1/agents/sessions/:session_id/turns/:turn_id",
  agents_sessions_turns_items_list: "GET /v1/agents/sessions/:session_id/turns/:turn_id/items",
  agents_sessions_subagents_list: "GET /v1/agents/sessions/:session_id/subagents",
  agents_sessions_subagents_retrieve: "GET /v1/agents/sessions/:session_id/subagents/:subagent_id",
  agents_sessions_subagents_items_list:
    "GET /v1/agents/sessions/:session_id/subagents/:subagent_id/items",
  agents_sessions_subagents_turns_list:
    "GET /v1/agents/sessions/:session_id/subagents/:subagent_id/turns",
  agents_sessions_subagents_turns_retrieve:
    "GET /v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id",
  agents_sessions_subagents_turns_items_list:
    "GET /v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id/items",
  agents_sessions_traces_list: "GET /v1/agents/sessions/:session_id/traces",
  agents_sessions_artifacts_list: "GET /v1/agents/sessions/:session_id/artifacts",
  agents_sessions_artifacts_retrieve: "GET /v1/agents/sessions/:session_id/artifacts/:artifact_id",
  agents_sessions_artifacts_delete: "DELETE /v1/agents/sessions/:session_id/artifacts/:artifact_id",
  agents_sessions_artifacts_content:
    "GET /v1/agents/sessions/:session_id/artifacts/:artifact_id/content",
  agents_environments_create: "POST /v1/agents/environments",
  agents_environments_retrieve: "GET /v1/agents/environments/:environment_id",
  agents_environments_list: "GET /v1/agents/environments",
  agents_environments_files_create: "POST /v1/agents/environments/:environment_id/files",
  agents_environments_files_list: "GET /v1/agents/environments/:environment_id/files",
  agents_environments_templates_create: "POST /v1/agents/environments/templates",
  agents_environments_templates_retrieve:
    "GET /v1/agents/environments/templates/:environment_template_id",
  agents_environments_templates_update:
    "POST /v1/agents/environments/templates/:environment_template_id",
  agents_environments_templates_list: "GET /v1/agents/environments/templates",
  agents_environments_templates_delete:
    "DELETE /v1/agents/environments/templates/:environment_template_id",
  agents_automations_create: "POST /v1/agents/automations",
  agents_automations_retrieve: "GET /v1/agents/automations/:automation_id",
  agents_automations_update: "POST /v1/agents/automations/:automation_id",
  agents_automations_list: "GET /v1/agents/automations",
  agents_automations_delete: "DELETE /v1/agents/automations/:automation_id",
  agents_automations_pause: "POST /v1/agents/automations/:automation_id/pause",
  agents_automations_resume: "POST /v1/agents/automations/:automation_id/resume",
  agents_automations_invocations_create: "POST /v1/agents/automations/:automation_id/invocations",
  agents_automations_invocations_retrieve:
    "GET /v1/agents/automations/:automation_id/invocations/:invocation_id",
  agents_automations_invocations_list: "GET /v1/agents/automations/:automation_id/invocations",
  agents_vaults_create: "POST /v1/vaults",
  agents_vaults_retrieve: "GET /v1/vaults/:vault_id",
  agents_vaults_update: "POST /v1/vaults/:vault_id",
  agents_vaults_list: "GET /v1/vaults",
  agents_vaults_delete: "DELETE /v1/vaults/:vault_id",
  agents_vaults_credentials_create: "POST /v1/vaults/:vault_id/credentials",
  agents_vaults_credentials_retrieve: "GET /v1/vaults/:vault_id/credentials/:credential_id",
  agents_vaults_credentials_update: "POST /v1/vaults/:vault_id/credentials/:credential_id",
  agents_vaults_credentials_list: "GET /v1/vaults/:vault_id/credentials",
  agents_vaults_credentials_delete: "DELETE /v1/vaults/:vault_id/credentials/:credential_id",
  agents_models_list: "GET /v1/models",
  agents_models_retrieve: "GET /v1/models/:model",
  agents_responses_create: "POST /v1/responses",
  agents_responses_retrieve: "GET /v1/responses/:response_id",
  agents_responses_delete: "DELETE /v1/responses/:response_id",
  agents_responses_cancel: "POST /v1/responses/:response_id/cancel",
  agents_responses_input_items_list: "GET /v1/responses/:response_id/input_items",
  agents_responses_input_tokens_count: "POST /v1/responses/input_tokens",
  agents_files_create: "POST /v1/files",
  agents_files_list: "GET /v1/files",
  agents_files_retrieve: "GET /v1/files/:file_id",
  agents_files_content: "GET /v1/files/:file_id/content",
  agents_files_delete: "DELETE /v1/files/:file_id",
};
