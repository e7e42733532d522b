/**
 * Delivering one invocation: the runtime's own functions, never an HTTP call to this server.
 *
 * - `new_session`: the session is checked and made as `sessions.create` makes one (the same
 *   refusals, under the automation owner's policy as it is now), then started with the
 *   target's input. `completed` once its first turn has started.
 * - `existing_session`: the instructions are posted as a user message, starting a turn;
 *   `completed` once it has started. A session with a turn still running is not interrupted
 *   or steered: the invocation is `skipped` with `skip_reason: "pending_delivery"`. A deleted
 *   session fails the invocation (`session_not_found`).
 *
 * "Completed" means delivered, not that the agent's work is done, as the API defines it.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { ServerState } from "../../state.ts";
import { prepareSession, type SessionsCore } from "../domain/sessions.ts";
import type { SessionBody } from "../runtime/records.ts";
import type { TargetParam } from "../schemas/automations.ts";
import { ownerIdentity } from "../tenants.ts";
import type { InvocationBody } from "./records.ts";

/** How a delivery ended, to be written on the invocation. */
export type DeliveryResult =
  | { status: "completed"; session_id: string }
  | { status: "skipped"; skip_reason: "pending_delivery"; session_id: string }
  | { status: "failed"; session_id: string | null; error: { code: string; message: string } };

/** What a delivery needs besides the invocation. */
export interface DeliveryContext {
  /** The server's state (guards, policy, process table). */
  state: ServerState;
  /** The agents core and runtime. */
  service: SessionsCore;
  /** The identity whose policy the delivery runs under. */
  owner: string;
  /** The target as sent, opened from its seal. */
  target: TargetParam;
  /** True once the server is stopping: nothing more is started. */
  stopping(): boolean;
  /** Record the session as soon as it exists (before the turn starts). */
  sessionMade(sessionId: string): void;
}

/** Deliver, returning what happened; undefined when the server stopped before it could. */
export async function deliver(ctx: DeliveryContext): Promise<DeliveryResult | undefined> {
  const { state, service, target } = ctx;
  const identity = ownerIdentity(state.policy, ctx.owner);
  if (!identity) {
    return failed(
      null,
      "identity_not_found",
      `The identity '${ctx.owner}' that created this automation is no longer in the policy.`,
    );
  }
  if (target.type === "existing_session") {
    const stored = service.store.get("session", target.session_id, "", ctx.owner);
    if (!stored) {
      return failed(
        null,
        "session_not_found",
        `The target session ${target.session_id} no longer exists.`,
      );
    }
    if (service.runtime.busy(stored.id)) {
      return { status: "skipped", skip_reason: "pending_delivery", session_id: stored.id };
    }
    if (ctx.stopping()) return undefined;
    service.runtime.startTurn(state, stored.body as SessionBody, [{
      content: [{ type: "input_text", text: target.instructions }],
    }]);
    return { status: "completed", session_id: stored.id };
  }
  let sessionId: string | null = null;
  try {
    const { type: _type, ...fields } = target;
    const prepared = await prepareSession(service, state, identity, fields);
    if (ctx.stopping()) return undefined;
    const session = await prepared.make();
    sessionId = session.id;
    ctx.sessionMade(session.id);
    if (ctx.stopping()) return undefined;
    prepared.start(session);
    return { status: "completed", session_id: session.id };
  } catch (e) {
    if (e instanceof ApiError) {
      const param = e.options.param ? ` (target.${e.options.param})` : "";
      return failed(sessionId, e.code, `${e.message}${param}`);
    }
    return failed(sessionId, "server_error", (e as Error).message);
  }
}

function failed(sessionId: string | null, code: string, message: string): DeliveryResult {
  return { status: "failed", session_id: sessionId, error: { code, message } };
}

/** The invocation with a delivery's result written on it. */
export function withResult(inv: InvocationBody, result: DeliveryResult): InvocationBody {
  return {
    ...inv,
    status: result.status,
    session_id: result.session_id,
    skip_reason: result.status === "skipped" ? result.skip_reason : null,
    error: result.status === "failed" ? result.error : null,
  };
}
