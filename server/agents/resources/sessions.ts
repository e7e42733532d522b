/**
 * `/v1/agents/sessions`: create (with `stream: true`, the events of the first turn as SSE),
 * retrieve, update, list and delete. A session runs an agent configuration (an agent's, given
 * by `agent_id`, with the session's `agent` fields on top, or only the latter) in an
 * environment of this sandbox: none, an existing one (`environment_id`), or one made for it
 * from the given settings. Its tools run under the policy of the identity that created it.
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import { idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import { artifactContentPath } from "../runtime/artifacts.ts";
import { type AgentConfig, publicBody, type SessionBody } from "../runtime/records.ts";
import { busyError } from "../runtime/runtime.ts";
import { sseResponse } from "../runtime/sse.ts";
import { sessionCreateSchema, sessionUpdateSchema } from "../schemas/sessions.ts";
import { agentsService } from "../service.ts";
import type { StoredObject } from "../store.ts";
import { tenantOf } from "../tenants.ts";
import { applyFields } from "../domain/agents.ts";
import { checkTools, prepareSession, refuseUnenforceable } from "../domain/sessions.ts";

function sessionOf(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("session_id")!;
  const found = store.get("session", id, "", tenantOf(c).sees);
  if (!found) throw notFound("session", id, "session_id");
  return found;
}

/**
 * The session of a request's `session_id`, as stored: one of the caller's own (any owner's for
 * an operator), else the 404 of a missing one.
 */
export const storedSession = sessionOf;

async function create(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const service = agentsService(state);
  const { store, runtime } = service;
  const { value, text } = await readJson(c, sessionCreateSchema);
  if (value.stream && c.req.header("idempotency-key") !== undefined) {
    throw invalid(
      "Idempotency-Key",
      "A streamed create cannot be replayed; send it without a key.",
    );
  }
  const { build, save, make, start } = await prepareSession(service, state, c.var.identity, value);
  if (!value.stream) {
    return idempotentCreate(c, store, text, async (commit) => {
      const session = await build();
      // The session, its first events and turn, and the kept answer: one commit, after which
      // the events are sent.
      return runtime.log.batch(() =>
        commit.now(() => {
          save(session);
          start(session);
          return { status: 200, body: publicBody(runtime.recorder(session.id).session()) };
        })
      );
    });
  }
  const session = await make();
  let unsubscribe = () => {};
  const { response, writer } = sseResponse(() => unsubscribe());
  // The first root turn's terminal event, then idle, ends the stream; without input, created.
  let turnId: string | undefined;
  let ended = false;
  unsubscribe = runtime.log.subscribe(session.id, {
    send(id, type, json, frame) {
      writer.send(id, type, json, frame);
      if (type === "agent.session.turn.created" && turnId === undefined) {
        turnId = JSON.parse(json).turn_id;
      } else if (type.startsWith("agent.session.turn.") && turnId !== undefined) {
        if (/\.(completed|failed|cancelled)$/.test(type) && JSON.parse(json).turn_id === turnId) {
          ended = true;
        }
      } else if (type === "agent.session.idle" && ended) {
        queueMicrotask(() => writer.close());
      }
    },
  });
  runtime.track(writer);
  start(session);
  if (!value.input) writer.close();
  return response;
}

/** The sessions handlers. */
export const sessionsResourceHandlers: HandlerMap<AgentsId> = {
  agents_sessions_create: create,
  agents_sessions_retrieve: (c) => json({ status: 200, body: publicBody(sessionOf(c).body) }),
  agents_sessions_update: async (c) => {
    const { store } = agentsService(c.var.state);
    const found = sessionOf(c);
    const { value } = await readJson(c, sessionUpdateSchema);
    refuseUnenforceable(value);
    const session = found.body as SessionBody;
    const agent = { ...session.agent } as Record<string, unknown>;
    const a = value.agent;
    if (a?.model !== undefined) agent.model = a.model;
    if (a?.reasoning !== undefined) {
      agent.reasoning = { ...session.agent.reasoning, effort: a.reasoning.effort ?? null };
    }
    if (a?.service_tier !== undefined) agent.service_tier = a.service_tier ?? "auto";
    if (a?.tools !== undefined) {
      applyFields(agent, { tools: a.tools });
      checkTools(agent.tools as Record<string, unknown>[], "agent.tools");
    }
    // Read again: a running turn may have changed the session while the body was read.
    const current = store.get("session", found.id)!.body as SessionBody;
    const updated: SessionBody = { ...current, agent: agent as AgentConfig };
    if (value.metadata !== undefined) updated.metadata = value.metadata ?? {};
    if (value.review !== undefined) updated.review = value.review;
    store.update(found.id, updated);
    return json({ status: 200, body: publicBody(updated) });
  },
  agents_sessions_list: (c) => {
    const { store } = agentsService(c.var.state);
    const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "agent_id", "metadata"]);
    const agentId = q.plain.get("agent_id");
    const metadata = q.maps.get("metadata");
    const page = listPage(store, "session", "", pageRequest(q), (o) =>
      publicBody(o.body) as {
        id: string;
      }, {
      owner: tenantOf(c).sees,
      ...(metadata ? { metadata: Object.fromEntries(metadata) } : {}),
      ...(agentId !== undefined ? { field: { name: "_agent_id", values: [agentId] } } : {}),
    });
    return json({ status: 200, body: page });
  },
  agents_sessions_delete: async (c) => {
    const service = agentsService(c.var.state);
    const { store, runtime } = service;
    const found = sessionOf(c);
    if (runtime.busy(found.id)) throw busyError(found.id);
    const artifacts = store.list("artifact", found.id, "asc", 100_000, undefined).rows;
    const subagents = store.list("subagent", found.id, "asc", 100_000, undefined).rows;
    const deleted = store.transaction(() => {
      // A subagent's turns, items and conversation are rows under it.
      for (const sub of subagents) store.delete(sub.id);
      return store.delete(found.id);
    });
    if (!deleted) throw notFound("session", found.id, "session_id");
    await runtime.forget(found.id);
    store.prepared("DELETE FROM traces WHERE session_id = ?").run(found.id);
    for (const a of artifacts) {
      await Deno.remove(artifactContentPath(service.config.dataDir, a.id)).catch(() => {});
    }
    return json({
      status: 200,
      body: { id: found.id, deleted: true, object: "agent.session.deleted" },
    });
  },
};
