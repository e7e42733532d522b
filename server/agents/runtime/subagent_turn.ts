/**
 * One turn of a subagent: its own loop (the same loop as a root turn) in the session's
 * sandbox and environment, under the policy of the identity that owns the session, with the
 * root turn's model upstream, the `shell` and `apply_patch` tools and the session's MCP tools
 * (not the client's functions, which only the root agent's caller answers, and not the
 * delegation tools: subagents do not spawn subagents).
 *
 * Its events go to the session's stream with its own `turn_id`, and its turn has
 * `subagent_id` set, so a client following the root turn is not ended by it. Its input is an
 * `agent_message` item from the agent that sent it.
 *
 * @module
 */

import { newId, unixNow } from "../ids.ts";
import type { HistoryEntry } from "./model/model.ts";
import type { InputMessage } from "./live_session.ts";
import { type SessionRecorder, TurnRecorder } from "./recorder.ts";
import { queuedTurn, TERMINAL_EVENT } from "./records.ts";
import type { AgentStatus, Subagent } from "./subagents.ts";
import { runTurnLoop, type TurnEnd, type TurnSetup } from "./turn_loop.ts";

/** What a root turn lends its subagents' turns. */
export interface SubagentTurnContext {
  /** The session's recorder. */
  session: SessionRecorder;
  /** The root turn's setup: the tools, model, environment and identity are taken from it. */
  setup: Omit<TurnSetup, "recorder" | "signal" | "steering" | "takeInput" | "overrides">;
  /** The conversation stored under a parent (a subagent's). */
  history(parent: string): HistoryEntry[];
  /** Whether the server is stopping (a turn then records nothing more). */
  stopping(): boolean;
}

function subagentNotice(sub: Subagent): string {
  return `You are a subagent (id ${sub.body.id}) that another agent (id ` +
    `${sub.body.parent_agent_id}) started for one task, in the same workspace. Do the task, ` +
    "then answer with what that agent needs: your final answer is what it receives.";
}

/** The last assistant message of a conversation. */
function lastAnswer(history: HistoryEntry[]): string | null {
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i];
    if (e.type === "message" && e.role === "assistant") {
      return e.content.map((c) => c.text ?? "").join("");
    }
  }
  return null;
}

/** Run one turn of `sub`; resolves with the status it leaves. */
export async function runSubagentTurn(
  ctx: SubagentTurnContext,
  sub: Subagent,
  messages: InputMessage[],
  steering: InputMessage[],
  signal: AbortSignal,
  slot: (signal: AbortSignal) => Promise<() => void>,
): Promise<AgentStatus> {
  const session = ctx.session;
  const root = session.session();
  const now = unixNow();
  const turn = queuedTurn(root, sub.body.id, now);
  session.log.batch(() => {
    session.store.insert("turn", turn.id, sub.body.id, now, turn, null);
    session.emit({ type: "agent.session.turn.created", turn }, turn.id);
  });
  const rec = new TurnRecorder(session, sub.live, turn);
  let release: () => void;
  try {
    release = await slot(signal);
  } catch {
    if (!ctx.stopping()) end(rec, { status: "cancelled" });
    return "interrupted";
  }
  let result: TurnEnd;
  try {
    rec.turnChange(
      { status: "in_progress", started_at: unixNow() },
      "agent.session.turn.in_progress",
    );
    sub.live.history ??= ctx.history(sub.body.id);
    const takeInput = (input: InputMessage[]) => {
      for (const m of input.splice(0)) {
        const text = m.content.map((c) => c.text ?? "").join("\n");
        rec.addItem({
          id: newId("message"),
          type: "agent_message",
          sender_agent_id: sub.body.parent_agent_id,
          recipient_agent_id: sub.body.id,
          content: [{ type: "output_text", text }],
        }, null);
        rec.remember({ type: "message", role: "user", content: [{ type: "input_text", text }] });
      }
    };
    result = await runTurnLoop({
      ...ctx.setup,
      recorder: rec,
      signal,
      steering,
      takeInput,
      notices: [...(ctx.setup.notices ?? []), subagentNotice(sub)],
      overrides: {
        model: sub.body._config.model,
        reasoningEffort: sub.body._config.reasoning_effort,
      },
    }, messages);
  } finally {
    release();
  }
  if (ctx.stopping()) return "interrupted";
  end(rec, result);
  if (result.status === "completed") return { completed: lastAnswer(sub.live.history!) };
  if (result.status === "failed") return { errored: result.message };
  return "interrupted";
}

function end(rec: TurnRecorder, result: TurnEnd): void {
  const error = result.status === "failed" ? { code: result.code, message: result.message } : null;
  rec.turnChange(
    { status: result.status, completed_at: unixNow(), error },
    TERMINAL_EVENT[result.status],
  );
}
