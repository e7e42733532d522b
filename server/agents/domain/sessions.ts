/**
 * Sessions as plain functions over the store: checking a session create (its agent
 * configuration, vaults and environment, all its owner's) and the steps that make, store and
 * start it. The HTTP resource (`resources/sessions.ts`) and automations that create a session
 * per invocation (`automations/delivery.ts`) call these; nothing here reads a request.
 *
 * @module
 */

import type { z } from "zod";
import type { Identity } from "../../policy/compile.ts";
import type { ServerState } from "../../state.ts";
import type { AgentsCore } from "../core.ts";
import { invalid, notFound } from "../errors.ts";
import { newId, unixNow } from "../ids.ts";
import { validate } from "../schemas/validate.ts";
import type { InputMessage } from "../runtime/live_session.ts";
import { type AgentConfig, publicBody, type SessionBody } from "../runtime/records.ts";
import type { AgentRuntime } from "../runtime/runtime.ts";
import {
  type InputMessageParam,
  type sessionCreateSchema,
  sessionEnvironmentSchemas,
} from "../schemas/sessions.ts";
import type { AgentStore, StoredObject } from "../store.ts";
import { applyFields, defaultAgentFields, type Fields } from "./agents.ts";
import { prepareEnvironment, presentEnvironment } from "./environments.ts";

/** What making a session needs: the core, and the runtime that starts its turns. */
export interface SessionsCore extends AgentsCore {
  /** Sessions, turns and their events. */
  readonly runtime: AgentRuntime;
}

/** Tool names the runtime offers itself; an agent's function may not take them. */
const BUILT_IN_TOOLS = ["shell", "apply_patch"];

/**
 * Refuse tool types no session can run, naming the field (`param[i].type`): an agent is checked
 * against this when created or updated, so a tool no session could run is refused at once, not
 * at its first session.
 */
export function checkToolTypes(tools: Record<string, unknown>[], param: string): void {
  for (const [i, t] of tools.entries()) {
    if (t.type !== "mcp" && t.type !== "function") {
      throw invalid(
        `${param}[${i}].type`,
        `Tools of type '${t.type}' are not supported by this server's sessions yet; use 'function' or 'mcp'.`,
      );
    }
  }
}

/** Refuse tools this runtime cannot run, naming the field. */
export function checkTools(tools: Record<string, unknown>[], param: string): void {
  checkToolTypes(tools, param);
  for (const [i, t] of tools.entries()) {
    if (t.type === "function" && BUILT_IN_TOOLS.includes(t.name as string)) {
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

export function refuseUnenforceable(value: { review?: string; spend_control?: unknown }): void {
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
  core: AgentsCore,
  state: ServerState,
  identity: Identity,
  raw: Record<string, unknown>,
) {
  const { store } = core;
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
      core,
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
  core: SessionsCore,
  state: ServerState,
  identity: Identity,
  value: SessionCreate,
): Promise<PreparedSession> {
  const { store, runtime } = core;
  refuseUnenforceable(value);
  const agent = agentConfig(store, identity.id, value.agent_id, value.agent);
  for (const [i, id] of (value.vault_ids ?? []).entries()) {
    if (!store.get("vault", id, "", identity.id)) throw notFound("vault", id, `vault_ids[${i}]`);
  }
  const environment = await environmentOf(core, state, identity, value.environment);
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
