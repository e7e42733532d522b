/**
 * `/v1/agents/sessions/{session_id}/events`: POST input events (202), GET the live stream.
 *
 * - A message to an idle session starts a turn; during a turn it steers it (taken into the
 *   turn's next model call). Cancel stops the running turn (a cancel with no turn running is
 *   accepted and does nothing, so a cancel racing the turn's end is not an error).
 * - A `tool_result` answers a pending function call. One that matches no pending call is
 *   answered `400` with `code: "invalid_request_error"` and the message
 *   `Unknown pending tool call: <call_id>`, which the official client retries a few times.
 *   Every event of a POST is checked before any is applied.
 * - GET streams every event appended after the subscription, in the log's order, with
 *   keep-alive comments; with `Last-Event-ID` it first replays what followed that event.
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { envelopeResponse, invalid } from "../errors.ts";
import { idempotentCreate } from "../idempotency.ts";
import { readJson } from "../v1_request_reader.ts";
import type { SessionBody } from "../runtime/records.ts";
import { sseResponse } from "../runtime/sse.ts";
import { inputEventsSchema } from "../schemas/sessions.ts";
import { agentsService } from "../service.ts";
import { inputMessages } from "../domain/sessions.ts";
import { storedSession } from "./sessions.ts";

/** The session events handlers. */
export const sessionEventsHandlers: HandlerMap<AgentsId> = {
  agents_sessions_events_create: async (c) => {
    const state = c.var.state;
    const { store, runtime } = agentsService(state);
    const session = storedSession(c);
    const { value, text } = await readJson(c, inputEventsSchema);
    return idempotentCreate(c, store, text, (commit) => {
      const live = runtime.live(session.id);
      for (const e of value.events) {
        if (e.type === "agent.session.input.tool_result") {
          const pending = live.pending.get(e.call_id);
          if (!pending || pending.turnId !== e.turn_id) {
            return Promise.resolve(envelopeResponse(400, {
              message: `Unknown pending tool call: ${e.call_id}`,
              type: "invalid_request_error",
              param: "events",
              code: "invalid_request_error",
            }));
          }
        }
        if (e.type === "agent.session.input.computer_use_approval_request_result") {
          throw invalid("events", `Unknown approval request: ${e.request_id}`);
        }
      }
      // What the events start (a turn, steering, a tool's result) and the kept answer: one
      // commit, after which the events are sent.
      return Promise.resolve(runtime.log.batch(() => commit.now(() => accept(value.events))));
    });
    function accept(events: typeof value.events) {
      for (const e of events) {
        if (e.type === "agent.session.input.message") {
          const messages = inputMessages(e.input);
          if (!runtime.steer(session.id, messages)) {
            const current = store.get("session", session.id)!.body as SessionBody;
            runtime.startTurn(state, current, messages);
          }
        } else if (e.type === "agent.session.input.cancel") {
          void runtime.cancel(session.id);
        } else if (e.type === "agent.session.input.tool_result") {
          runtime.toolResult(session.id, e.turn_id, e.call_id, {
            success: e.success,
            output: e.output ?? null,
            error: e.error ?? null,
          });
        }
      }
      return { status: 202, body: {} };
    }
  },
  agents_sessions_events_stream: (c) => {
    const { runtime } = agentsService(c.var.state);
    const session = storedSession(c);
    const lastId = c.req.header("last-event-id");
    const missed = lastId === undefined ? [] : runtime.log.after(session.id, lastId);
    if (missed === undefined) {
      throw invalid("Last-Event-ID", `'${lastId}' is not an event of session ${session.id}.`);
    }
    let unsubscribe = () => {};
    const { response, writer } = sseResponse(() => unsubscribe());
    // Replay and subscribe in one synchronous step: no event can fall between them.
    for (const e of missed) writer.send(e.id, e.type, e.json);
    unsubscribe = runtime.log.subscribe(session.id, writer);
    runtime.track(writer);
    return response;
  },
};
