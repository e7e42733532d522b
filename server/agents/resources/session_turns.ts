/**
 * A session's items (the root agent's, in order), its turns, one turn, and one turn's items.
 * Every list pages as the others do; the turn items' page carries `last_id`, which the client's
 * `ConversationCursorPage` follows.
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { notFound } from "../errors.ts";
import { json, jsonText } from "../idempotency.ts";
import { listPage, listPageText, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery } from "../v1_request_reader.ts";
import { agentsService } from "../service.ts";
import { storedSession } from "./sessions.ts";

/** The turns and items handlers. */
export const sessionTurnsHandlers: HandlerMap<AgentsId> = {
  agents_sessions_items_list: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const q = parseQuery(new URL(c.req.url).search, PAGE_PARAMS);
    return jsonText(listPageText(store, "item", session.id, pageRequest(q)));
  },
  agents_sessions_turns_list: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const q = parseQuery(new URL(c.req.url).search, PAGE_PARAMS);
    return jsonText(listPageText(store, "turn", session.id, pageRequest(q)));
  },
  agents_sessions_turns_retrieve: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const id = c.req.param("turn_id")!;
    const turn = store.get("turn", id, session.id);
    if (!turn) throw notFound("turn", id, "turn_id");
    return json({ status: 200, body: turn.body });
  },
  agents_sessions_turns_items_list: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const id = c.req.param("turn_id")!;
    if (!store.get("turn", id, session.id)) throw notFound("turn", id, "turn_id");
    const q = parseQuery(new URL(c.req.url).search, PAGE_PARAMS);
    const page = listPage(
      store,
      "item",
      session.id,
      pageRequest(q),
      (o) => o.body as { id: string },
      { field: { name: "turn_id", values: [id] } },
    );
    return json({ status: 200, body: page });
  },
};
