/**
 * `/v1/agents/automations`: create, retrieve, update, list (`session_id` filter), delete,
 * pause and resume. An automation is checked whole when it is saved (its schedule, and its
 * target as `sessions.create` would check it, under the caller's policy), so a mistake is a
 * `400` naming the field now rather than a failed invocation later.
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import { ApiError } from "../../errors.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { Identity } from "../../policy/compile.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import { conflict, invalid, notFound } from "../errors.ts";
import { newId } from "../ids.ts";
import { idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import { prepareSession } from "../domain/sessions.ts";
import {
  automationCreateSchema,
  automationUpdateSchema,
  emptyBodySchema,
  type TargetParam,
} from "../schemas/automations.ts";
import { agentsService } from "../service.ts";
import { ownerIdentity, tenantOf } from "../tenants.ts";
import type { StoredObject } from "../store.ts";
import { type AutomationBody, publicAutomation, targetResource } from "./records.ts";
import { scheduleOf } from "./scheduler.ts";
import { checkExpression, checkTimezone, nextFiring, type Schedule } from "./schedule.ts";

/** The automation of a request's `automation_id`, as stored. */
export function storedAutomation(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("automation_id")!;
  const found = store.get("automation", id, "", tenantOf(c).sees);
  if (!found) throw notFound("automation", id, "automation_id");
  return found;
}

/** A refusal about a target's own field, renamed as a field of `target`. */
function underTarget(e: unknown): unknown {
  if (!(e instanceof ApiError) || !e.options.param) return e;
  const param = e.options.param;
  return new ApiError(e.code, e.message.replaceAll(`'${param}'`, `'target.${param}'`), {
    ...e.options,
    param: `target.${param}`,
  });
}

/** Check a target now, as `sessions.create` (or posting input) would, creating nothing. */
async function checkTarget(
  state: ServerState,
  identity: Identity,
  target: TargetParam,
): Promise<void> {
  const service = agentsService(state);
  const { store } = service;
  if (target.type === "existing_session") {
    // The target is the owner's own session, operator or not: the automation runs as it.
    if (!store.get("session", target.session_id, "", identity.id)) {
      throw notFound("session", target.session_id, "target.session_id");
    }
    return;
  }
  if ((target.agent === undefined) === (target.agent_id === undefined)) {
    throw invalid(
      "target.agent",
      "Provide exactly one of 'target.agent' (an inline configuration) and 'target.agent_id'.",
    );
  }
  try {
    const { type: _type, ...fields } = target;
    await prepareSession(service, state, identity, fields);
  } catch (e) {
    throw underTarget(e);
  }
}

/** The first firing after now, refusing a schedule that never fires. */
function firstFiring(schedule: Schedule, nowMs: number): number {
  const next = nextFiring(schedule, nowMs);
  if (next !== null) return next;
  if (schedule.type === "once") {
    throw invalid(
      "run_at",
      `Invalid 'run_at': ${schedule.run_at} is not in the future (now is ${
        Math.floor(nowMs / 1000)
      }).`,
    );
  }
  throw invalid(
    "expression",
    `Invalid 'expression': '${schedule.expression}' matches no date; for example '0 9 * * 1-5'.`,
  );
}

function answer(body: Record<string, unknown>): Response {
  return json({ status: 200, body: publicAutomation(body) });
}

async function create(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const service = agentsService(state);
  const { store, automations, box } = service;
  const { value, text } = await readJson(c, automationCreateSchema);
  let schedule: Schedule;
  if (value.type === "periodic") {
    checkExpression(value.expression, "expression");
    checkTimezone(value.timezone, "timezone");
    schedule = { type: "periodic", expression: value.expression, timezone: value.timezone };
  } else {
    schedule = { type: "once", run_at: value.run_at };
  }
  const next = firstFiring(schedule, automations.nowMs());
  await checkTarget(state, c.var.identity, value.target);
  return idempotentCreate(c, store, text, async (commit) => {
    const id = newId("automation");
    const now = automations.nowSeconds();
    const body: AutomationBody = {
      id,
      object: "agent.automation",
      type: value.type,
      name: value.name,
      created_at: now,
      created_by: { type: "developer" },
      metadata: value.metadata ?? {},
      status: "active",
      ...(schedule.type === "periodic"
        ? { expression: schedule.expression, timezone: schedule.timezone }
        : { run_at: schedule.run_at }),
      target: targetResource(value.target),
      _session_id: value.target.type === "existing_session" ? value.target.session_id : "",
      _internal: { owner: c.var.identity.id, next_at: next },
    };
    const sealed = await box.seal(value.target, id);
    const answer = { status: 200, body: publicAutomation(body) };
    await commit.soon(
      answer,
      () => store.insert("automation", id, "", now, body, sealed, c.var.identity.id),
    );
    automations.changed();
    return answer;
  });
}

async function update(c: Context<ServerEnv>): Promise<Response> {
  const state = c.var.state;
  const { store, automations, box } = agentsService(state);
  const found = storedAutomation(c);
  const { value } = await readJson(c, automationUpdateSchema);
  const current = found.body as AutomationBody;
  for (const field of ["expression", "timezone"] as const) {
    if (value[field] !== undefined && current.type !== "periodic") {
      throw invalid(field, `'${field}' is only accepted for periodic automations; use 'run_at'.`);
    }
  }
  if (value.run_at !== undefined && current.type !== "once") {
    throw invalid("run_at", "'run_at' is only accepted for once automations; use 'expression'.");
  }
  if (value.run_at !== undefined && current.status === "completed") {
    throw conflict(
      "This automation has already fired; 'run_at' can only change before it does.",
      "run_at",
    );
  }
  const targetType = (current.target as { type: string }).type;
  if (value.target !== undefined && value.target.type !== targetType) {
    throw invalid(
      "target.type",
      `The target keeps its type: expected '${targetType}', got '${value.target.type}'.`,
    );
  }
  if (value.expression !== undefined) checkExpression(value.expression, "expression");
  if (value.timezone !== undefined) checkTimezone(value.timezone, "timezone");
  const updated: AutomationBody = { ...current, _internal: { ...current._internal } };
  if (value.name !== undefined) updated.name = value.name;
  if (value.metadata !== undefined) updated.metadata = value.metadata;
  if (value.expression !== undefined) updated.expression = value.expression;
  if (value.timezone !== undefined) updated.timezone = value.timezone;
  if (value.run_at !== undefined) updated.run_at = value.run_at;
  const rescheduled = value.expression !== undefined || value.timezone !== undefined ||
    value.run_at !== undefined;
  if (rescheduled) {
    const next = firstFiring(scheduleOf(updated), automations.nowMs());
    if (updated.status === "active") updated._internal.next_at = next;
  }
  let sealed: Uint8Array | undefined;
  if (value.target !== undefined) {
    // Checked as the automation's owner, who it runs as, whoever (an operator) changes it.
    const owner = ownerIdentity(state.policy, found.owner);
    if (!owner) {
      throw invalid(
        "target",
        `The identity '${found.owner}' that owns this automation is no longer in the policy.`,
      );
    }
    await checkTarget(state, owner, value.target);
    updated.target = targetResource(value.target);
    updated._session_id = value.target.type === "existing_session" ? value.target.session_id : "";
    sealed = await box.seal(value.target, found.id);
  }
  if (!store.get("automation", found.id, "", found.owner)) {
    throw notFound("automation", found.id, "automation_id");
  }
  store.update(found.id, updated, sealed);
  automations.changed();
  return answer(updated);
}

function pause(c: Context<ServerEnv>): Promise<Response> {
  const { store, automations } = agentsService(c.var.state);
  const found = storedAutomation(c);
  const current = found.body as AutomationBody;
  if (current.status === "completed") {
    throw conflict("This automation has completed; there is nothing left to pause.");
  }
  const updated: AutomationBody = {
    ...current,
    status: "paused",
    _internal: { ...current._internal, next_at: null },
  };
  store.update(found.id, updated);
  automations.changed();
  return Promise.resolve(answer(updated));
}

function resume(c: Context<ServerEnv>): Promise<Response> {
  const { store, automations } = agentsService(c.var.state);
  const found = storedAutomation(c);
  const current = found.body as AutomationBody;
  if (current.status === "completed") {
    throw conflict("This automation has completed; create another, or update a paused one.");
  }
  if (current.status === "active") return Promise.resolve(answer(current));
  const schedule = scheduleOf(current);
  const nowMs = automations.nowMs();
  const next = nextFiring(schedule, nowMs);
  if (next === null && schedule.type === "once") {
    throw invalid(
      "run_at",
      `'run_at' (${schedule.run_at}) has passed; update it to a future time, then resume.`,
    );
  }
  const updated: AutomationBody = {
    ...current,
    status: "active",
    _internal: { ...current._internal, next_at: next },
  };
  store.update(found.id, updated);
  automations.changed();
  return Promise.resolve(answer(updated));
}

/** The automations handlers. */
export const automationsResourceHandlers: HandlerMap<AgentsId> = {
  agents_automations_create: create,
  agents_automations_retrieve: (c) => answer(storedAutomation(c).body),
  agents_automations_update: update,
  agents_automations_list: (c) => {
    const { store } = agentsService(c.var.state);
    const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "session_id"]);
    const sessionId = q.plain.get("session_id");
    const page = listPage(
      store,
      "automation",
      "",
      pageRequest(q),
      (o) => publicAutomation(o.body) as { id: string },
      {
        owner: tenantOf(c).sees,
        ...(sessionId !== undefined ? { field: { name: "_session_id", values: [sessionId] } } : {}),
      },
    );
    return json({ status: 200, body: page });
  },
  agents_automations_delete: (c) => {
    const { store, automations } = agentsService(c.var.state);
    const found = storedAutomation(c);
    if (!store.delete(found.id)) throw notFound("automation", found.id, "automation_id");
    automations.changed();
    return json({
      status: 200,
      body: { id: found.id, deleted: true, object: "agent.automation.deleted" },
    });
  },
  agents_automations_pause: async (c) => {
    await readJson(c, emptyBodySchema);
    return pause(c);
  },
  agents_automations_resume: async (c) => {
    await readJson(c, emptyBodySchema);
    return resume(c);
  },
};
