/**
 * sandbar's client library: the typed {@linkcode ServerClient} of the in-sandbox server, its
 * {@linkcode ServerCapabilities}, the error classes, the typed models, and
 * {@linkcode ENDPOINT_METHODS} (endpoint id → client methods).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox, ServerClient } from "@sandbar/sandbar/sdk";
 *
 * await using sandbox = await Sandbox.create();
 * // Any server is reached the same way; here, the sandbox's own (its gateway wants these headers).
 * await using client = new ServerClient(sandbox.server.baseUrl, {
 *   headers: sandbox.network.getAccessHeaders(),
 * });
 * assert.equal(await client.health(), true);
 * const caps = await sandbox.server.discover();
 * if (caps.can("shell")) {
 *   assert.equal((await sandbox.server.process.shell("echo hello")).stdout, "hello\n");
 * }
 * ```
 *
 * @module
 */

export {
  AuthenticationError,
  CapabilityNotSupportedError,
  CommandNotFoundError,
  ConflictError,
  ConnectionError,
  EndpointNotAvailableError,
  FilePolicyDeniedError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  PolicyDeniedError,
  ProviderFeatureNotSupportedError,
  RateLimitedError,
  SandboxError,
  type SandboxErrorOptions,
  SandboxNotFoundError,
  ServerAPIError,
  type ServerAPIErrorOptions,
  ServerAuthError,
  ServerNotFoundError,
  ServerTimeoutError,
  ServerValidationError,
  TimeoutError,
  ValidationError,
} from "./errors/mod.ts";
export type * from "./models/mod.ts";
export {
  SANDBOX_STATUSES,
  type SandboxEvent,
  type SandboxInfo,
  type SandboxMetrics,
  SandboxStatus,
} from "./models/sandbox.ts";

// A sandbox and its modules.
export { Sandbox, type ServerAtOptions } from "./sandbox/sandbox.ts";
export type {
  SandboxConnectionOptions,
  SandboxCreateOptions,
  SandboxListOptions,
} from "./sandbox/options.ts";
export type { StartServerOptions } from "./sandbox/start_server.ts";
export type { SandboxTerminal } from "./sandbox/terminal.ts";
export type { CommandOptions, CommandRunOptions, CommandsModule } from "./sandbox/commands.ts";
export type { CommandHandle } from "./sandbox/command_handle.ts";
export type { FileReadOptions, FilesModule, FileWriteEntry } from "./sandbox/files.ts";
export type { WatchHandle } from "./sandbox/watch_handle.ts";
export type { NetworkModule } from "./sandbox/network.ts";
export type { CodeContext, CodeModule, CodeRunOptions } from "./sandbox/code.ts";

// The typed client of the in-sandbox server.
export { ServerClient, type ServerClientOptions } from "./client/server_client.ts";
export {
  type CapabilitiesDocumentWire,
  type PathChecker,
  ServerCapabilities,
} from "./client/server_capabilities.ts";
export { ENDPOINT_METHODS } from "./client/endpoint_methods.ts";
export type {
  AgentsApi,
  AgentsAutomations,
  AgentsCrud,
  AgentsEnvironments,
  AgentsFiles,
  AgentsListOnly,
  AgentsMethod,
  AgentsResponses,
  AgentsSessions,
  AgentsTurns,
  AgentsVaults,
  OpenAIClientOptions,
} from "./client/agents.ts";
export type {
  BrowserApi,
  NavigateOptions,
  PageWaitOptions,
  PdfOptions,
  TypeOptions,
} from "./client/browser.ts";
export type { NamedCommandsApi } from "./client/named_commands.ts";
export type {
  CodeLanguage,
  CreateContextOptions,
  DevtoolsApi,
  GitDiffOptions,
  RunCodeOptions,
} from "./client/devtools.ts";
export type {
  ByteRange,
  DownloadOptions,
  FilesApi,
  SearchOptions,
  UploadData,
  UploadOptions,
  WatchForOptions,
  WatchOptions,
} from "./client/files.ts";
export type {
  Command,
  FollowOptions,
  ProcessApi,
  RunOptions,
  RunStreamOptions,
  StartOptions,
} from "./client/process.ts";
export type { PtyApi, PtyConnectOptions, PtyCreateOptions } from "./client/pty.ts";
export type { PtyConnection } from "./client/pty_connection.ts";
export type { SystemApi } from "./client/system.ts";
export type {
  CallOptions,
  FetchFunction,
  OpenResponse,
  QueryValue,
  ServerTransport,
  TransportRequest,
} from "./client/transport.ts";

// Providers: where sandboxes run.
export { type ProviderFactory, providerNames, registerProvider } from "./providers/registry.ts";
export type {
  PortAddress,
  ProviderCreateRequest,
  ProviderCredentials,
  ProviderListQuery,
  SandboxHandle,
  SandboxProvider,
} from "./providers/types.ts";
export {
  type DockerCreateStep,
  DockerProvider,
  type DockerProviderOptions,
} from "./providers/docker/index.ts";
export {
  Engine,
  type EngineAddress,
  engineAddress,
  type EngineCallOptions,
  EngineError,
  HijackedStream,
} from "./providers/docker/engine.ts";
export { buildTemplate, type BuildTemplateOptions } from "./providers/docker/build.ts";
export { LocalProvider, type LocalProviderOptions } from "./providers/local/index.ts";
export type { Isolation } from "./providers/local/state.ts";
