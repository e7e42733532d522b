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
import type { HandlerMap } from "../../handlers/types.ts";
import type { z } from "zod";
import type { Identity } from "../../policy/compile.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import { newId, unixNow } from "../ids.ts";
import { idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson, validate } from "../request.ts";
import { artifactContentPath } from "../runtime/artifacts.ts";
import type { InputMessage } from "../runtime/live_session.ts";
import { type AgentConfig, publicBody, type SessionBody } from "../runtime/records.ts";
import { busyError } from "../runtime/runtime.ts";
import { sseResponse } from "../runtime/sse.ts";
import {
  type InputMessageParam,
  sessionCreateSchema,
  sessionEnvironmentSchemas,
  sessionUpdateSchema,
} from "../schemas/sessions.ts";
import { agentsService } from "../service.ts";
import type { AgentStore, StoredObject } from "../store.ts";
import { tenantOf } from "../tenants.ts";
import { defaultAgentFields } from "./agent_defaults.ts";
import { applyFields, type Fields } from "./agents.ts";
import { prepareEnvironment, presentEnvironment } from "./environments.ts";

/** Tool names the runtime offers itself; an agent's function may not take them. */
const BUILT_IN_TOOLS = ["shell", "apply_patch"];

/** Refuse tools this runtime cannot run, naming the field. */
function checkTools(tools: Record<string, unknown>[], param: string): void {
  for (const [i, t] of tools.entries()) {
    if (t.type === "mcp") continue;
    if (t.type !== "function") {
      throw invalid(
        `${param}[${i}].type`,
        `Tools of type '${t.type}' are not supported by this server's sessions yet; use 'function' or 'mcp'.`,
      );
    }
    if (BUILT_IN_TOOLS.includes(t.name as string)) {
      throw invalid(
        `${param}[${i}].name`,
        `'${t.name}' is a built-in tool of every session with an environment; choose another name.`,
      );
    }
  }
}

function agentConfig(
  store: AgentStore,
  owner: string,
  agentId: string | undefined,
  own: Fields | undefined,
) {
  const base: Record<string, unknown> = { id: null, name: null, ...defaultAgentFields() };
  if (agentId !== undefined) {
    const agent = store.get("agent", agentId, "", owner);
    if (!agent) throw notFound("agent", agentId, "agent_id");
    for (const k of Object.keys(base)) if (k in agent.body) base[k] = agent.body[k];
    if (agent.body.compaction) base.compaction = agent.body.compaction;
    if (agent.body.experimental) base.experimental = agent.body.experimental;
  }
  if (own) applyFields(base, own);
  if (!base.model) {
    throw invalid("agent.model", "Missing required parameter: 'agent.model' (no agent_id given).");
  }
  checkTools(base.tools as Record<string, unknown>[], "agent.tools");
  return base as AgentConfig;
}

/** Messages of a create's `input` or of an input event. */
export function inputMessages(input: string | InputMessageParam[]): InputMessage[] {
  if (typeof input === "string") return [{ content: [{ type: "input_text", text: input }] }];
  return input.map((m) => ({ content: m.content }));
}

function refuseUnenforceable(value: { review?: string; spend_control?: unknown }): void {
  if (value.review === "auto_review") {
    throw invalid("review", "Automatic review is not available on this server; use 'none'.");
  }
  const sc = value.spend_control as { limit: number | null } | null | undefined;
  if (sc && sc.limit !== null) {
    throw invalid(
      "spend_control.limit",
      "A spending limit cannot be enforced by this server (it does not know the upstream's prices).",
    );
  }
}

async function environmentOf(
  state: ServerState,
  identity: Identity,
  raw: Record<string, unknown>,
) {
  const { store } = agentsService(state);
  if (raw.type === "none") {
    validate(sessionEnvironmentSchemas.none, raw);
    return { id: null, body: { type: "none" }, make: undefined };
  }
  if (raw.type === "openai_hosted" && "environment_id" in raw) {
    const v = validate(sessionEnvironmentSchemas.existing, raw);
    const env = store.get("environment", v.environment_id, "", identity.id);
    if (!env) throw notFound("environment", v.environment_id, "environment.environment_id");
    return { id: env.id, body: environmentBody(store, env), make: undefined };
  }
  if (raw.type === "openai_hosted") {
    const v = validate(sessionEnvironmentSchemas.own, raw);
    const { container_size: _size, ...settings } = v;
    const make = await prepareEnvironment(
      state,
      identity,
      { environment: { ...settings, type: "openai_hosted" } },
      "environment",
    );
    return { id: null, body: null, make };
  }
  throw invalid(
    "environment.type",
    `Environments of type '${raw.type}' are not supported here; use 'none' or 'openai_hosted'.`,
  );
}

function environmentBody(store: AgentStore, env: StoredObject): Record<string, unknown> {
  const e = presentEnvironment(store, env) as Record<string, unknown>;
  return {
    type: "openai_hosted",
    id: e.id,
    capability_directories: [],
    files: e.files,
    network: e.network,
    packages: e.packages,
    plugins: [],
    skills: [],
  };
}

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

/** A session create's body, validated. */
export type SessionCreate = z.output<typeof sessionCreateSchema>;

/** A session create checked: the steps that make and store it, and the one that starts it. */
export interface PreparedSession {
  /** Make its environment (when it brings settings) and the session's body; stores no session. */
  build(): Promise<SessionBody>;
  /** Store a built session, idle. */
  save(session: SessionBody): void;
  /** {@linkcode build}, then {@linkcode save}. */
  make(): Promise<SessionBody>;
  /** Send `agent.session.created` and start the first turn when there is input. */
  start(session: SessionBody): void;
}

/**
 * Check a session create now (refusing with the field named), as `identity`, and return the
 * steps that make and start it. Automations that create a session per invocation go through
 * here too. The session belongs to `identity`, and everything it names (its agent, vaults and
 * environment) must be `identity`'s own, operator or not: its turns use only its owner's.
 */
export async function prepareSession(
  state: ServerState,
  identity: Identity,
  value: SessionCreate,
): Promise<PreparedSession> {
  const service = agentsService(state);
  const { store, runtime } = service;
  refuseUnenforceable(value);
  const agent = agentConfig(store, identity.id, value.agent_id, value.agent);
  for (const [i, id] of (value.vault_ids ?? []).entries()) {
    if (!store.get("vault", id, "", identity.id)) throw notFound("vault", id, `vault_ids[${i}]`);
  }
  const environment = await environmentOf(state, identity, value.environment);
  const build = async (): Promise<SessionBody> => {
    let envId = environment.id;
    let envBody = environment.body;
    if (environment.make) {
      const made = await environment.make();
      envId = made.id;
      envBody = environmentBody(store, store.get("environment", made.id, "", identity.id)!);
    }
    const now = unixNow();
    const session: SessionBody = {
      id: newId("session"),
      object: "agent.session",
      agent,
      created_at: now,
      last_active_at: now,
      environment: envBody,
      error: null,
      metadata: value.metadata ?? {},
      required_actions: [],
      status: "idle",
      usage: null,
      vault_ids: value.vault_ids ?? [],
      review: value.review ?? "none",
      _agent_id: agent.id ?? "",
      _internal: { owner: identity.id, environment_id: envId },
    };
    return session;
  };
  const save = (session: SessionBody) =>
    store.insert(
      "session",
      session.id,
      "",
      session.created_at as number,
      session,
      null,
      session._internal.owner,
    );
  const make = async (): Promise<SessionBody> => {
    const session = await build();
    save(session);
    return session;
  };
  const start = (session: SessionBody) => {
    runtime.recorder(session.id).emit(
      { type: "agent.session.created", session: publicBody(session) },
      null,
    );
    if (value.input) runtime.startTurn(state, session, inputMessages(value.input));
  };
  return { build, save, make, start };
}

async function create(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const { store, runtime } = agentsService(state);
  const { value, text } = await readJson(c, sessionCreateSchema);
  if (value.stream && c.req.header("idempotency-key") !== undefined) {
    throw invalid(
      "Idempotency-Key",
      "A streamed create cannot be replayed; send it without a key.",
    );
  }
  const { build, save, make, start } = await prepareSession(state, c.var.identity, value);
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
