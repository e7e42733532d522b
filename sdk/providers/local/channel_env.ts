/**
 * The variables that tell the relay where its channel is. A module of their own, so that the
 * relay, preloaded into every sandbox's server, loads them without the supervisor's side of the
 * channel (`channel.ts`, which re-exports them).
 *
 * @module
 */

/**
 * The variables that tell the relay, preloaded into the sandbox's server (`relay.ts`), where its
 * socket, its key file and the egress proxy's socket are. It removes them before the server
 * loads.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { CHANNEL_ENV } from "./channel_env.ts";
 * assert.equal(CHANNEL_ENV.socket, "SANDBAR_CHANNEL");
 * ```
 */
export const CHANNEL_ENV = {
  socket: "SANDBAR_CHANNEL",
  key: "SANDBAR_CHANNEL_KEY",
  egress: "SANDBAR_CHANNEL_EGRESS",
  /**
   * `1`: the server goes on when the channel ends (a docker sandbox outlives the process that
   * created it, and other processes reach it through relays of their own).
   */
  keep: "SANDBAR_CHANNEL_KEEP",
} as const;
