/**
 * A session's subagents (`/v1/agents/sessions/{session_id}/subagents…`): the list (closed ones
 * included), one subagent, its items, its turns, one of its turns and that turn's items. Every
 * list pages as the others do. A subagent's turns and items are its own: the session's lists
 * hold the root agent's only (its delegation calls and the answers it was handed included).
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { notFound } from "../errors.ts";
import { json, jsonText } from "../idempotency.ts";
import { listPage, listPageText, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery } from "../v1_request_reader.ts";
import { publicBody } from "../runtime/records.ts";
import { agentsService } from "../service.ts";
import type { StoredObject } from "../store.ts";
import { storedSession } from "./sessions.ts";

function subagentOf(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const session = storedSession(c);
  const id = c.req.param("subagent_id")!;
  const found = store.get("subagent", id, session.id);
  if (!found) throw notFound("subagent", id, "subagent_id");
  return found;
}

function turnOf(c: Context<ServerEnv>, subagentId: string): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("turn_id")!;
  const found = store.get("turn", id, subagentId);
  if (!found) throw notFound("turn", id, "turn_id");
  return found;
}

const query = (c: Context<ServerEnv>) =>
  pageRequest(parseQuery(new URL(c.req.url).search, PAGE_PARAMS));

/** The subagents handlers. */
export const subagentsResourceHandlers: HandlerMap<AgentsId> = {
  agents_sessions_subagents_list: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const page = listPage(
      store,
      "subagent",
      session.id,
      query(c),
      (o) => publicBody(o.body) as { id: string },
    );
    return json({ status: 200, body: page });
  },
  agents_sessions_subagents_retrieve: (c) =>
    json({ status: 200, body: publicBody(subagentOf(c).body) }),
  agents_sessions_subagents_items_list: (c) => {
    const { store } = agentsService(c.var.state);
    const sub = subagentOf(c);
    return jsonText(listPageText(store, "item", sub.id, query(c)));
  },
  agents_sessions_subagents_turns_list: (c) => {
    const { store } = agentsService(c.var.state);
    const sub = subagentOf(c);
    return jsonText(listPageText(store, "turn", sub.id, query(c)));
  },
  agents_sessions_subagents_turns_retrieve: (c) => {
    const sub = subagentOf(c);
    return json({ status: 200, body: turnOf(c, sub.id).body });
  },
  agents_sessions_subagents_turns_items_list: (c) => {
    const { store } = agentsService(c.var.state);
    const sub = subagentOf(c);
    const turn = turnOf(c, sub.id);
    const page = listPage(
      store,
      "item",
      sub.id,
      query(c),
      (o) => o.body as { id: string },
      { field: { name: "turn_id", values: [turn.id] } },
    );
    return json({ status: 200, body: page });
  },
};
