/**
 * The typed models of the server client, by group.
 *
 * @module
 */

export type {
  DenialReason,
  EndpointInfo,
  EndpointLimits,
  EndpointPaths,
  GroupSummary,
  PathDecision,
  PathOperation,
  ServerCommand,
  ServerCommandArg,
} from "./core.ts";
