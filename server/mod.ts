/**
 * The in-sandbox server: 118 endpoints on one HTTP port and a PTY WebSocket on another, every
 * request through one policy pipeline (match, authenticate, admit, duplicate parameters, body
 * limit, handler guards, audit).
 *
 * Run it from the command line (`deno run -A server/main.ts --policy policy.jsonc`), or start it
 * in a process of your own:
 *
 * @example Starting a server and calling it
 * ```ts
 * import assert from "node:assert/strict";
 * import { startServer } from "@sandbar/sandbar/server";
 * const root = await Deno.makeTempDir();
 * const server = await startServer({ port: 0, ptyPort: 0, root, env: {}, audit: () => {} });
 * const res = await fetch(`${server.url}/capabilities`, {
 *   headers: { authorization: `Bearer ${server.token}` },
 * });
 * assert.equal(res.status, 200);
 * assert.ok("shell" in (await res.json()).endpoints);
 * await server.close();
 * await Deno.remove(root);
 * ```
 *
 * @module
 */

export { type SandbarServer, startServer, type StartServerOptions } from "./serve.ts";
export type { SchedulerClock } from "./agents/automations/schedule.ts";
export {
  type AgentsId,
  ENDPOINT_ROWS,
  type EndpointGroup,
  type EndpointId,
  type EndpointLimits,
  type EndpointMethod,
  ENDPOINTS,
  ENDPOINTS_BY_ID,
  type EndpointSpec,
  type GroupId,
  GROUPS,
  OPT_IN_GROUPS,
} from "./endpoints.ts";
export {
  type CommandArg,
  type CommandArgType,
  type CommandContext,
  type CommandDefinition,
  type CommandFunction,
  type CommandInfo,
  CommandRegistry,
} from "./named_commands/registry.ts";
export { parsePolicy, PolicyLoadError } from "./policy/load.ts";
export { loadPolicyFile } from "./policy/read.ts";
export type {
  PolicyEndpointSetting,
  PolicyFile,
  PolicyIdentity,
  PolicyLimits,
  PolicyNetwork,
} from "./policy/schema.ts";
export {
  type HostRule,
  type NetworkConfig,
  type NetworkDecision,
  type NetworkRule,
  NetworkRules,
  parseNetworkRule,
  type SecretConfig,
  type SecretRule,
} from "./egress/rules.ts";
export { EgressCa } from "./egress/tls_intercept.ts";
export { EgressProxy, type EgressProxyOptions, type ProxyAddress } from "./egress/proxy.ts";
export { ApiError, type ApiErrorOptions, type ErrorCode } from "./errors.ts";
export { type ServerAddresses, type ServerEnv, ServerState, type Service } from "./state.ts";
export type { PresetName } from "./policy/presets.ts";
export type { AuditEntry, AuditSink } from "./pipeline/audit.ts";
export type { CompiledPolicy, EndpointState, Identity, PathSettings } from "./policy/compile.ts";
