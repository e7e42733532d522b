/**
 * sandbar's client library: the typed {@linkcode ServerClient} of the in-sandbox server, its
 * {@linkcode ServerCapabilities}, the error classes, the typed models, and
 * {@linkcode ENDPOINT_METHODS} (endpoint id → client methods).
 *
 * @example
 * ```ts ignore
 * import { ServerClient } from "@sandbar/sandbar/sdk";
 *
 * await using client = new ServerClient("http://127.0.0.1:9000", { token: "…" });
 * const caps = await client.discover();
 * if (caps.can("shell")) console.log((await client.process.shell("uname -a")).stdout);
 * await client.files.upload("hello.txt", "hello");
 * ```
 *
 * @module
 */

export * from "./errors/index.ts";
export type * from "./models/index.ts";
export {
  type CapabilitiesDocumentWire,
  type PathChecker,
  ServerCapabilities,
} from "./capabilities.ts";
export {
  DEFAULT_TIMEOUT_MS,
  derivePtyUrl,
  ServerClient,
  type ServerClientOptions,
} from "./client/index.ts";
export {
  AgentsApi,
  type AgentsAutomations,
  type AgentsCrud,
  type AgentsEnvironments,
  type AgentsFiles,
  type AgentsListOnly,
  type AgentsMethod,
  agentsMethodName,
  type AgentsResponses,
  type AgentsSessions,
  type AgentsTurns,
  type AgentsVaults,
  type OpenAIClientOptions,
} from "./client/agents.ts";
export {
  BrowserApi,
  type NavigateOptions,
  type PageWaitOptions,
  type PdfOptions,
  type TypeOptions,
} from "./client/browser.ts";
export { CommandsApi } from "./client/commands.ts";
export {
  type CodeLanguage,
  type CreateContextOptions,
  DevtoolsApi,
  type GitDiffOptions,
  type RunCodeOptions,
} from "./client/devtools.ts";
export {
  type ByteRange,
  type DownloadOptions,
  FilesApi,
  type SearchOptions,
  type UploadData,
  type UploadOptions,
  type WatchForOptions,
  type WatchOptions,
} from "./client/files.ts";
export {
  type Command,
  type FollowOptions,
  ProcessApi,
  type RunOptions,
  type RunStreamOptions,
  type StartOptions,
  waitingRequestTimeout,
} from "./client/process.ts";
export { PtyApi, type PtyConnectOptions, type PtyCreateOptions } from "./client/pty.ts";
export { PtyConnection, stripAnsi } from "./client/pty_connection.ts";
export { SystemApi } from "./client/system.ts";
export {
  type CallOptions,
  callRequest,
  endpointUrl,
  type FetchFunction,
  type OpenResponse,
  type QueryValue,
  ServerTransport,
  type ServerTransportOptions,
  type TransportRequest,
} from "./client/transport.ts";
export { ROUTES } from "./client/routes.ts";
export { ENDPOINT_METHODS } from "./endpoint_methods.ts";
export { Sandbox, type ServerAtOptions } from "./sandbox/index.ts";
export type {
  SandboxConnectionOptions,
  SandboxCreateOptions,
  SandboxListOptions,
} from "./sandbox/options.ts";
export type { StartServerOptions } from "./sandbox/start_server.ts";
export { SandboxTerminal } from "./sandbox/terminal.ts";
export { SANDBOX_STATUSES, type SandboxInfo, SandboxStatus } from "./models/sandbox.ts";
export { type CommandOptions, type CommandRunOptions, CommandsModule } from "./modules/commands.ts";
export { CommandHandle } from "./modules/command_handle.ts";
export { type DataPlaneUrl, FilesModule } from "./modules/files.ts";
export { WatchHandle, type WatchSource } from "./modules/watch_handle.ts";
export { NetworkModule, type NetworkSource } from "./modules/network.ts";
export { type CodeContext, CodeModule, type CodeRunOptions } from "./modules/code.ts";
export type { ModuleContext } from "./modules/context.ts";
export {
  type ProviderFactory,
  providerNames,
  registerProvider,
  resolveProvider,
} from "./providers/registry.ts";
export type {
  PortAddress,
  ProviderCreateRequest,
  ProviderCredentials,
  ProviderListQuery,
  SandboxHandle,
  SandboxProvider,
} from "./providers/types.ts";
export { LocalProvider, type LocalProviderOptions } from "./providers/local/index.ts";
export type { Isolation } from "./providers/local/state.ts";
