/**
 * What every part of the agents group below its composition root shares: the store, the secret
 * box and the configuration. The root (`service.ts`) opens them once and hands them down; the
 * runtime, MCP, environments, automations and the domain functions take an {@linkcode AgentsCore}
 * as an argument instead of looking the service up in the server's state, so imports run one
 * way (HTTP layer → root → runtime and automations → domain → store) and no lower part can
 * reach the layers above it.
 *
 * @module
 */

import type { AgentsConfig } from "./config.ts";
import type { SecretBox } from "./crypto.ts";
import type { AgentStore } from "./store.ts";

/** The store, the box and the configuration of a running agents group. */
export interface AgentsCore {
  /** The durable store. */
  readonly store: AgentStore;
  /** Seals and opens secrets. */
  readonly box: SecretBox;
  /** What the group was given at start. */
  readonly config: AgentsConfig;
  /** Run `close` when the group closes (a background setup's abort, a cache's release). */
  onClose(close: () => void | Promise<void>): void;
}
