/**
 * The runtime's stored objects and their public forms. Sessions, turns and items are rows of
 * the store's `objects` table (kinds `session`, `turn`, `item`, `history`, `artifact`); a
 * body's keys that start with `_` are the server's own (the owning identity, the environment's
 * workspace, an artifact's digest) and are never answered.
 *
 * @module
 */

import { newId } from "../ids.ts";
import type { TokenUsage } from "./model/model.ts";

/** A session as stored. */
export interface SessionBody extends Record<string, unknown> {
  /** Its id. */
  id: string;
  /** `idle`, `in_progress`, `requires_action` or `failed`. */
  status: string;
  /** The agent configuration it runs. */
  agent: AgentConfig;
  /** The actions a client must take. */
  required_actions: Record<string, unknown>[];
  /** Summed usage. */
  usage: TokenUsage | null;
  /** Its vaults. */
  vault_ids: string[];
  /** Unix seconds of its last turn's activity. */
  last_active_at: number;
  /** The server's own: who owns it, and its environment. */
  _internal: SessionInternal;
}

/** What only the server sees of a session. */
export interface SessionInternal {
  /** The identity whose policy its tools run under. */
  owner: string;
  /** The environment's id, or null for `none`. */
  environment_id: string | null;
}

/** The agent configuration of a session, as answered. */
export interface AgentConfig extends Record<string, unknown> {
  /** The agent's id, or null for an inline configuration. */
  id: string | null;
  /** Instructions. */
  instructions: string | null;
  /** Model. */
  model: string;
  /** Reasoning settings. */
  reasoning: { effort: string | null; summary: string | null };
  /** Tools. */
  tools: Record<string, unknown>[];
}

/** A turn as stored and answered. */
export interface TurnBody extends Record<string, unknown> {
  /** Its id. */
  id: string;
  /** Always `agent.session.turn`. */
  object: "agent.session.turn";
  /** The agent's id. */
  agent_id: string | null;
  /** Its session. */
  session_id: string;
  /** Null for a root turn. */
  subagent_id: string | null;
  /** Unix seconds. */
  created_at: number;
  /** Unix seconds, once running. */
  started_at: number | null;
  /** Unix seconds, once ended. */
  completed_at: number | null;
  /** `queued`, `in_progress`, `waiting`, `completed`, `failed` or `cancelled`. */
  status: string;
  /** Why it failed. */
  error: { code: string; message: string } | null;
  /** Its summed usage. */
  usage: TokenUsage | null;
}

/**
 * A new turn as first stored, `queued`: of the root agent when `subagentId` is null, else of
 * that subagent (a subagent's turns belong to the root session too).
 */
export function queuedTurn(
  session: SessionBody,
  subagentId: string | null,
  createdAt: number,
): TurnBody {
  return {
    id: newId("turn"),
    object: "agent.session.turn",
    agent_id: session.agent.id,
    session_id: session.id,
    subagent_id: subagentId,
    created_at: createdAt,
    started_at: null,
    completed_at: null,
    status: "queued",
    error: null,
    usage: null,
  };
}

/** Statuses a turn can still leave. */
export const OPEN_TURN_STATUSES = ["queued", "in_progress", "waiting"] as const;

/** Terminal turn statuses, by their event. */
export const TERMINAL_EVENT = {
  completed: "agent.session.turn.completed",
  failed: "agent.session.turn.failed",
  cancelled: "agent.session.turn.cancelled",
} as const;

/**
 * A body without the server's own keys.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicBody } from "./records.ts";
 * assert.deepEqual(publicBody({ id: "a", _internal: { owner: "x" } }), { id: "a" });
 * ```
 */
export function publicBody(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in body) if (k[0] !== "_") out[k] = body[k];
  return out;
}
