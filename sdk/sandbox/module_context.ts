/**
 * What a sandbox module needs from its `Sandbox`: the id, the data-plane client (which throws
 * `ProviderFeatureNotSupportedError` when the provider has none) and the capability set.
 *
 * @module
 */

import type { ServerClient } from "../client/server_client.ts";

/** A module's view of its sandbox. */
export interface ModuleContext {
  /** The sandbox id. */
  readonly sandboxId: string;
  /** The sandbox's capability names. */
  readonly capabilities: ReadonlySet<string>;
  /** The client of the in-sandbox server (port 9000). */
  server(): ServerClient;
  /** Whether the kernel killed a process of the sandbox for want of memory since `since`. */
  oomKilledSince?(since: Date): Promise<boolean>;
}
