/**
 * The agent runtime of a server: the live state of every session, the start of turns, what
 * posted input events do (start a turn, steer the running one, cancel it, answer a function
 * call), and the recovery at start of turns a stopped server left running.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { AuditSink } from "../../pipeline/audit.ts";
import type { ServerState } from "../../state.ts";
import { unixNow } from "../ids.ts";
import type { AgentsCore } from "../core.ts";
import { publishArtifacts } from "./artifacts.ts";
import { EventLog } from "./event_log.ts";
import { type InputMessage, LiveSession } from "./live_session.ts";
import { chatCompletionsModel } from "./model/chat_completions.ts";
import type { HistoryEntry } from "./model/model.ts";
import { responsesModel } from "./model/responses.ts";
import { SessionRecorder, TurnRecorder } from "./recorder.ts";
import {
  OPEN_TURN_STATUSES,
  queuedTurn,
  type SessionBody,
  TERMINAL_EVENT,
  type TurnBody,
} from "./records.ts";
import { sessionUpstream, toolEnvironment } from "./session_setup.ts";
import type { SseWriter } from "./sse.ts";
import { ApplyPatchTool } from "./tools/apply_patch.ts";
import { ClientFunctionTools } from "./tools/client_functions.ts";
import { McpTools } from "./tools/mcp_tools.ts";
import { ShellTool } from "./tools/shell.ts";
import { McpRequiredServerError } from "../mcp/errors.ts";
import { closeSessionMcp, sessionMcpTools } from "./session_mcp.ts";
import type { ToolProvider } from "./tools/tool.ts";
import { exportTrace, TraceBuilder } from "./traces.ts";
import { runTurnLoop, takeMessages, type TurnEnd, type TurnSetup } from "./turn_loop.ts";
import { SubagentManager } from "./subagents.ts";
import { runSubagentTurn } from "./subagent_turn.ts";
import { DelegationTools } from "./tools/delegation.ts";

/** What a restart tells a turn it interrupted. */
export const RESTART_MESSAGE =
  "The server restarted while this turn was running; everything recorded before that is kept.";

/** The runtime. */
export class AgentRuntime {
  /** The session event logs. */
  readonly log: EventLog;
  /** Where refused tool calls are audited (set by the server at start). */
  auditSink: AuditSink | undefined;
  /** Extra tool providers, offered after the built-in ones (MCP, subagents). */
  readonly extraTools: ((session: SessionBody) => ToolProvider[])[] = [];
  readonly #service: AgentsCore;
  /** Each live session's subagents, once a turn of an agent with `multi_agent` ran. */
  readonly #subagents = new WeakMap<LiveSession, SubagentManager>();
  readonly #live = new Map<string, LiveSession>();
  readonly #streams = new Set<SseWriter>();
  #stopping = false;

  /** The runtime of a service. */
  constructor(service: AgentsCore) {
    this.#service = service;
    this.log = new EventLog(service.store);
  }

  /** A session's live state. */
  live(sessionId: string): LiveSession {
    let live = this.#live.get(sessionId);
    if (!live) this.#live.set(sessionId, live = new LiveSession(sessionId));
    return live;
  }

  /** Whether a session has a turn running. */
  busy(sessionId: string): boolean {
    return this.#live.get(sessionId)?.turn !== undefined;
  }

  /** Forget a deleted session; its MCP servers are closed (and their processes reaped). */
  async forget(sessionId: string): Promise<void> {
    const live = this.#live.get(sessionId);
    this.#live.delete(sessionId);
    this.log.drop(sessionId);
    if (live) await closeSessionMcp(live);
  }

  /** The session's recorder. */
  recorder(sessionId: string): SessionRecorder {
    return new SessionRecorder(this.#service.store, this.log, sessionId);
  }

  /**
   * Start a turn on an idle session with these messages: the turn is stored `queued` and then
   * `in_progress`, the session `in_progress`, the messages taken as its first items, and their
   * events (`turn.created`, `session.in_progress`, `turn.in_progress`, `item.added`) sent, all
   * in one commit before this returns; the turn then runs in the background.
   */
  startTurn(state: ServerState, session: SessionBody, messages: InputMessage[]): TurnBody {
    const live = this.live(session.id);
    const now = unixNow();
    const turn = queuedTurn(session, null, now);
    const sessionRec = this.recorder(session.id);
    // The turn's span covers its start too.
    const trace = new TraceBuilder(turn.id, session.id);
    live.history ??= this.#history(live.id);
    const rec = new TurnRecorder(sessionRec, live, turn);
    this.log.batch(() => {
      this.#service.store.insert("turn", turn.id, session.id, now, turn, null);
      sessionRec.emit({ type: "agent.session.turn.created", turn }, turn.id);
      sessionRec.sessionStatus("in_progress");
      rec.turnChange({ status: "in_progress", started_at: now }, "agent.session.turn.in_progress");
      takeMessages(rec, messages);
    });
    const abort = new AbortController();
    const done = Promise.withResolvers<void>();
    live.turn = { id: turn.id, abort, steering: [], done: done.promise };
    this.#run(state, rec, trace).catch((e) => {
      console.error(`sandbar: an agent turn could not be recorded: ${(e as Error).stack ?? e}`);
    }).finally(done.resolve);
    return turn;
  }

  async #run(state: ServerState, rec: TurnRecorder, trace: TraceBuilder): Promise<void> {
    const live = rec.live;
    const running = live.turn!;
    const service = this.#service;
    let end: TurnEnd;
    let environment = null;
    let subagents: SubagentManager | undefined;
    try {
      const session = rec.session.session();
      environment = await toolEnvironment(state, service, session);
      const upstream = await sessionUpstream(service, session);
      const identity = state.policy.identities.find((i) => i.id === session._internal.owner);
      const builtIn = environment ? [new ShellTool(), new ApplyPatchTool()] : [];
      const tools: ToolProvider[] = [
        ...builtIn,
        new ClientFunctionTools(session.agent.tools),
        ...this.extraTools.flatMap((make) => make(session)),
      ];
      const multiAgent = session.agent.multi_agent as
        | { enabled?: boolean; max_concurrent_subagents?: number | null }
        | undefined;
      if (multiAgent?.enabled) {
        subagents = this.#subagents.get(live);
        if (!subagents) {
          subagents = new SubagentManager(service.store, rec.session);
          this.#subagents.set(live, subagents);
        }
        tools.push(new DelegationTools(subagents, live.id));
      }
      const notices: string[] = [];
      const subagentTools: ToolProvider[] = [...builtIn];
      const mcpSet = await sessionMcpTools(live, session, {
        state,
        core: service,
        identity,
        environment,
        reservedNames: tools.flatMap((t) => t.definitions().map((d) => d.name)),
      });
      if (mcpSet) {
        const mcp = new McpTools(mcpSet);
        tools.push(mcp);
        subagentTools.push(mcp);
        if (mcp.notice()) notices.push(mcp.notice());
      }
      const setup: TurnSetup = {
        state,
        recorder: rec,
        trace,
        model: {
          adapter: upstream.api === "chat_completions" ? chatCompletionsModel : responsesModel,
          upstream,
        },
        tools,
        environment,
        identity,
        signal: running.abort.signal,
        notices,
        steering: running.steering,
        audit: (tool, error) => this.#audit(tool, session._internal.owner, error),
      };
      subagents?.attach(
        (sub, input, steering, signal, slot) =>
          runSubagentTurn(
            {
              session: rec.session,
              setup: { ...setup, tools: subagentTools },
              history: (parent) => this.#history(parent),
              stopping: () => this.#stopping,
            },
            sub,
            input,
            steering,
            signal,
            slot,
          ),
        multiAgent?.max_concurrent_subagents ?? null,
        running.abort.signal,
      );
      // The first messages are already the turn's items (taken when it started).
      end = await runTurnLoop(setup, []);
    } catch (e) {
      end = e instanceof McpRequiredServerError
        ? { status: "failed", code: "connection_failed", message: e.message }
        : { status: "failed", code: "sandbox_error", message: (e as Error).message };
    }
    // Subagent turns end (cancelled) before the root turn does.
    await subagents?.detach();
    // A stopping server leaves the turn as it is: the next start marks it failed.
    if (this.#stopping) return;
    live.pending.clear();
    if (environment) {
      await publishArtifacts(state, service.store, service.config.dataDir, {
        id: live.id,
        environmentId: environment.id,
        workspace: environment.workspace,
      }, rec.turn.id).catch((e) => {
        console.error(`sandbar: publishing artifacts failed: ${(e as Error).message}`);
      });
    }
    const error = end.status === "failed" ? { code: end.code, message: end.message } : null;
    const otlp = trace.finish({ "agents.turn.status": end.status }, error?.message);
    if (service.config.otlpTracesUrl) void exportTrace(service.config.otlpTracesUrl, otlp);
    // One commit for the end: the trace, the terminal event, and idle.
    this.log.batch(() => {
      service.store.prepared(
        "INSERT INTO traces (turn_id, session_id, created_at, otlp) VALUES (?, ?, ?, ?)",
      ).run(rec.turn.id, live.id, unixNow(), JSON.stringify(otlp));
      rec.turnChange(
        { status: end.status, completed_at: unixNow(), error },
        TERMINAL_EVENT[end.status],
      );
      live.turn = undefined;
      rec.session.sessionStatus("idle");
    });
  }

  /** The conversation stored under a session (the root agent's) or a subagent. */
  #history(parent: string): HistoryEntry[] {
    const rows = this.#service.store.prepared(
      "SELECT body FROM objects WHERE kind = 'history' AND parent = ? ORDER BY seq",
    ).all(parent) as { body: string }[];
    const entries = rows.map((r) => JSON.parse(r.body) as HistoryEntry);
    // A call a stop or a cancel left without its output gets one, as the model API requires.
    const answered = new Set(
      entries.filter((e) => e.type === "function_call_output").map((e) => e.call_id),
    );
    const out: HistoryEntry[] = [];
    for (const e of entries) {
      out.push(e);
      if (e.type === "function_call" && !answered.has(e.call_id)) {
        out.push({
          type: "function_call_output",
          call_id: e.call_id,
          output: "error: the call was interrupted before it finished",
        });
      }
    }
    return out;
  }

  #audit(tool: string, identity: string, error: ApiError): void {
    this.auditSink?.({
      time: new Date().toISOString(),
      endpoint: `agents.tool.${tool}`,
      identity,
      decision: "deny",
      status: error.status,
      code: error.code,
    });
  }

  /** Messages posted while a turn runs join it before its next model call. */
  steer(sessionId: string, messages: InputMessage[]): boolean {
    const turn = this.#live.get(sessionId)?.turn;
    if (!turn) return false;
    turn.steering.push(...messages);
    return true;
  }

  /** Cancel the running turn, if any; resolves once the session is idle again. */
  cancel(sessionId: string): Promise<void> | undefined {
    const turn = this.#live.get(sessionId)?.turn;
    if (!turn) return undefined;
    turn.abort.abort();
    return turn.done;
  }

  /**
   * Answer a pending function call; false when no such call waits (the client then retries,
   * as it does when it answers before the call was registered).
   */
  toolResult(
    sessionId: string,
    turnId: string,
    callId: string,
    result: { success: boolean; output: unknown; error: string | null },
  ): boolean {
    const pending = this.#live.get(sessionId)?.pending.get(callId);
    if (!pending || pending.turnId !== turnId) return false;
    pending.resolve(result);
    return true;
  }

  /**
   * At start: every turn a stopped server left open is failed (`server_error`, saying the
   * server restarted), its open items are incomplete, its session idle; the events say so.
   */
  recover(): void {
    const store = this.#service.store;
    for (const status of OPEN_TURN_STATUSES) {
      for (const row of store.byField("turn", "status", status)) {
        const turn = {
          ...(row.body as TurnBody),
          status: "failed",
          completed_at: unixNow(),
          error: { code: "server_error", message: RESTART_MESSAGE },
        };
        store.update(turn.id, turn);
        const rec = this.recorder(turn.session_id);
        for (const item of store.byField("item", "turn_id", turn.id)) {
          if (item.body.status === "in_progress") {
            store.update(item.id, { ...item.body, status: "incomplete" });
          }
        }
        rec.emit({ type: "agent.session.turn.failed", turn, usage: turn.usage }, turn.id);
        // A subagent's turn ends with its root turn, which says idle.
        if (turn.subagent_id === null && store.get("session", turn.session_id)) {
          rec.sessionStatus("idle");
        }
      }
    }
  }

  /** Keep an open event stream, to end it when the server stops. */
  track(writer: SseWriter): void {
    if (this.#streams.size >= 64) {
      for (const w of this.#streams) if (w.closed) this.#streams.delete(w);
    }
    this.#streams.add(writer);
  }

  /**
   * Stop: running turns are aborted (their processes killed) and record nothing more, and open
   * event streams end. The flag and the aborts happen before the first await.
   */
  close(): Promise<void> {
    this.#stopping = true;
    const running = [...this.#live.values()].flatMap((l) => l.turn ? [l.turn] : []);
    for (const t of running) t.abort.abort();
    for (const w of this.#streams) w.close();
    this.#streams.clear();
    return Promise.allSettled(running.map((t) => t.done)).then(() => {});
  }
}

/** Refuse what a session cannot take while a turn runs (409, not retried). */
export function busyError(sessionId: string): ApiError {
  return new ApiError(
    "conflict",
    `Session ${sessionId} has a turn running; cancel it or wait for agent.session.idle.`,
    { param: "session_id" },
  );
}
