/**
 * sandbar's client library: the typed {@linkcode ServerClient} of the in-sandbox server, its
 * {@linkcode ServerCapabilities}, the error classes and the typed models.
 *
 * @example
 * ```ts ignore
 * import { ServerClient } from "@sandbar/sandbar/sdk";
 *
 * await using client = new ServerClient("http://127.0.0.1:9000", { token: "…" });
 * const caps = await client.discover();
 * console.log(caps.can("shell"), await client.commands.list());
 * ```
 *
 * @module
 */

export * from "./errors/index.ts";
export * from "./models/index.ts";
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
export { type CallOptions, CommandsApi } from "./client/commands.ts";
export {
  endpointUrl,
  type FetchFunction,
  type OpenResponse,
  type QueryValue,
  ServerTransport,
  type ServerTransportOptions,
  type TransportRequest,
} from "./client/transport.ts";
export { ROUTES } from "./client/routes.ts";
