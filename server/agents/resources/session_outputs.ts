/**
 * What a session's turns leave behind: artifacts (list, retrieve, delete, content) and traces
 * (list; one OTLP JSON trace per root turn, whose id is the turn's).
 *
 * @module
 */

import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { invalid, notFound } from "../errors.ts";
import { json, jsonText } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery } from "../v1_request_reader.ts";
import { artifactContentPath } from "../runtime/artifacts.ts";
import { publicBody } from "../runtime/records.ts";
import { agentsService } from "../service.ts";
import type { AgentStore } from "../store.ts";
import { storedSession } from "./sessions.ts";

function tracesPage(
  store: AgentStore,
  sessionId: string,
  page: { after?: string; limit: number; order: "asc" | "desc" },
): string {
  let afterSeq: number | undefined;
  if (page.after !== undefined) {
    const row = store.prepared("SELECT seq FROM traces WHERE turn_id = ? AND session_id = ?")
      .get(page.after, sessionId) as { seq: number } | undefined;
    if (!row) {
      throw invalid("after", `Invalid 'after': '${page.after}' is not a trace of this list.`);
    }
    afterSeq = row.seq;
  }
  const dir = page.order === "asc" ? "ASC" : "DESC";
  const cmp = page.order === "asc" ? ">" : "<";
  const rows = store.prepared(
    `SELECT turn_id, created_at, otlp FROM traces WHERE session_id = ? AND seq ${cmp} ? ` +
      `ORDER BY seq ${dir} LIMIT ?`,
  ).all(
    sessionId,
    afterSeq ?? (page.order === "asc" ? -1 : Number.MAX_SAFE_INTEGER),
    page.limit + 1,
  ) as { turn_id: string; created_at: number; otlp: string }[];
  const shown = rows.slice(0, page.limit);
  const data = shown.map((r) =>
    `{"id":${
      JSON.stringify(r.turn_id)
    },"object":"agent.session.trace","created_at":${r.created_at},` +
    `"session_id":${JSON.stringify(sessionId)},"otlp":${r.otlp}}`
  );
  const first = shown.length ? JSON.stringify(shown[0].turn_id) : "null";
  const last = shown.length ? JSON.stringify(shown.at(-1)!.turn_id) : "null";
  return `{"object":"list","data":[${data.join(",")}],"first_id":${first},"last_id":${last},` +
    `"has_more":${rows.length > page.limit}}`;
}

/** The artifacts and traces handlers. */
export const sessionOutputsHandlers: HandlerMap<AgentsId> = {
  agents_sessions_traces_list: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const q = parseQuery(new URL(c.req.url).search, PAGE_PARAMS);
    return jsonText(tracesPage(store, session.id, pageRequest(q)));
  },
  agents_sessions_artifacts_list: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "environment_id"]);
    const env = q.plain.get("environment_id");
    const page = listPage(
      store,
      "artifact",
      session.id,
      pageRequest(q),
      (o) => publicBody(o.body) as { id: string },
      env === undefined ? {} : { field: { name: "environment_id", values: [env] } },
    );
    return json({ status: 200, body: page });
  },
  agents_sessions_artifacts_retrieve: (c) => {
    const { store } = agentsService(c.var.state);
    const session = storedSession(c);
    const id = c.req.param("artifact_id")!;
    const found = store.get("artifact", id, session.id);
    if (!found) throw notFound("artifact", id, "artifact_id");
    return json({ status: 200, body: publicBody(found.body) });
  },
  agents_sessions_artifacts_delete: async (c) => {
    const service = agentsService(c.var.state);
    const session = storedSession(c);
    const id = c.req.param("artifact_id")!;
    if (!service.store.get("artifact", id, session.id) || !service.store.delete(id)) {
      throw notFound("artifact", id, "artifact_id");
    }
    await Deno.remove(artifactContentPath(service.config.dataDir, id)).catch(() => {});
    return json({
      status: 200,
      body: { id, deleted: true, object: "agent.session.artifact.deleted" },
    });
  },
  agents_sessions_artifacts_content: async (c) => {
    const service = agentsService(c.var.state);
    const session = storedSession(c);
    const id = c.req.param("artifact_id")!;
    const found = service.store.get("artifact", id, session.id);
    if (!found) throw notFound("artifact", id, "artifact_id");
    const file = await Deno.open(artifactContentPath(service.config.dataDir, id));
    return new Response(file.readable, {
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(found.body.size_bytes),
      },
    });
  },
};
