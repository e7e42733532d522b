/**
 * What the server holds in memory for a session while it runs: the running turn (with the
 * controller that cancels it and the processes it started), the function calls waiting for a
 * client's `tool_result`, messages that steer the running turn, and the conversation sent to
 * the model (read from the store once, then kept up to date).
 *
 * @module
 */

import type { HistoryEntry } from "./model/model.ts";
import type { McpToolSet } from "../mcp/types.ts";

/** A function call waiting for the client. */
export interface PendingCall {
  /** The turn that made it. */
  turnId: string;
  /** The function's name. */
  name: string;
  /** Its arguments, as JSON text. */
  arguments: string;
  /** Called with the client's result. */
  resolve(result: { success: boolean; output: unknown; error: string | null }): void;
}

/** A user message as posted. */
export interface InputMessage {
  /** Its content parts. */
  content: { type: string; text?: string; image_url?: string }[];
}

/** The running turn of a session. */
export interface RunningTurn {
  /** Its id. */
  id: string;
  /** Aborts the upstream call, the tools and the waits: the turn is cancelled. */
  abort: AbortController;
  /** Messages for the turn's next model call. */
  steering: InputMessage[];
  /** Ends when the turn has ended and the session is idle again. */
  done: Promise<void>;
}

/** The open set of a session and what it was opened for. */
export interface SessionMcp {
  /** The agent's entries and the vaults, as JSON: a change opens the set again. */
  key: string;
  /** The set. */
  set: McpToolSet;
}

/** Where a session keeps its set (its live state). */
export interface McpHolder {
  /** The open set, if any. */
  mcp?: SessionMcp;
}

/** A session's live state. */
export class LiveSession implements McpHolder {
  /** The session's id. */
  readonly id: string;
  /** The running turn, if any. */
  turn: RunningTurn | undefined;
  /** Function calls waiting for a client, by call id. */
  readonly pending = new Map<string, PendingCall>();
  /** The conversation, once loaded. */
  history: HistoryEntry[] | undefined;
  /** The session's open MCP servers, once a turn needed them. */
  mcp: SessionMcp | undefined;

  /** A live state for a session. */
  constructor(id: string) {
    this.id = id;
  }
}
