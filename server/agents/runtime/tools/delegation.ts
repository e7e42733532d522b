/**
 * The delegation tools of an agent with `multi_agent.enabled`, in the names and shapes of
 * Codex's multi-agent tools, so a Codex-trained model uses them as it learnt to:
 *
 * - `spawn_agent {message, agent_type?, model?, reasoning_effort?}` → `{"agent_id", "nickname"}`
 * - `send_input {id, message, interrupt?}` → `{"submission_id"}`
 * - `resume_agent {id}` → `{"status"}`
 * - `wait {ids, timeout_ms?, all?}` → `{"status": {<id>: <status>}, "timed_out"}`
 * - `close_agent {id}` → `{"status"}` (the status it had)
 *
 * Each call is recorded on the calling agent as the API's item for it
 * (`create_subagent_call`, `send_subagent_input_call` with an `interrupt_subagent_call` before
 * it when it interrupts, `resume_subagent_call`, `wait_for_subagents_call`,
 * `close_subagent_call`), declared here and added by the registry (`registry.ts`) only once the
 * arguments are valid and the agent named is there, so a bad call has no item. Each final
 * answer a `wait` hands over is an `agent_message` item from the subagent, added by the
 * execution: it is the call's output, marked delivered as it is added.
 *
 * @module
 */

import { newId } from "../../ids.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import type { AgentStatus, Subagent, SubagentManager } from "../subagents.ts";
import {
  ArgumentsError,
  parseArguments,
  type Tool,
  type ToolCall,
  type ToolContext,
  ToolError,
  type ToolProvider,
} from "./tool.ts";

/** Default and longest wait, in milliseconds. */
export const WAIT_TIMEOUT_MS = { default: 30_000, max: 60 * 60_000 };

const str = (description: string) => ({ type: "string", description });

const DEFINITIONS: FunctionToolDefinition[] = [
  {
    type: "function",
    name: "spawn_agent",
    description: "Spawn a sub-agent for a well-scoped task. It works in the same workspace, " +
      "with the same tools. Returns the agent id to use to communicate with this agent.",
    parameters: {
      type: "object",
      properties: {
        message: str(
          "Initial task for the new agent. Include scope, constraints, and the expected output.",
        ),
        agent_type: str("Optional label for the agent (for example worker or explorer)."),
        model: str("Optional model for the agent; by default the same as yours."),
        reasoning_effort: str("Optional reasoning effort for the agent."),
      },
      required: ["message"],
      additionalProperties: false,
    },
  },
  {
    type: "function",
    name: "send_input",
    description: "Send a message to an existing agent. Use interrupt=true to redirect work " +
      "immediately.",
    parameters: {
      type: "object",
      properties: {
        id: str("Agent id to message (from spawn_agent)."),
        message: str("Message to send to the agent."),
        interrupt: {
          type: "boolean",
          description: "When true, stop the agent's current task and handle this immediately. " +
            "When false (default), queue this message.",
        },
      },
      required: ["id", "message"],
      additionalProperties: false,
    },
  },
  {
    type: "function",
    name: "resume_agent",
    description: "Resume a previously closed agent by id so it can receive send_input and " +
      "wait calls.",
    parameters: {
      type: "object",
      properties: { id: str("Agent id to resume.") },
      required: ["id"],
      additionalProperties: false,
    },
  },
  {
    type: "function",
    name: "wait",
    description: "Wait for agents to reach a final status. Completed statuses include the " +
      "agent's final message. Returns when one of them is final (all of them with all=true), " +
      "or when the timeout passed (timed_out true).",
    parameters: {
      type: "object",
      properties: {
        ids: {
          type: "array",
          items: { type: "string" },
          description: "Agent ids to wait on. Pass multiple ids to wait for whichever " +
            "finishes first.",
        },
        timeout_ms: {
          type: "number",
          description:
            `Optional timeout in milliseconds. Defaults to ${WAIT_TIMEOUT_MS.default}, ` +
            `max ${WAIT_TIMEOUT_MS.max}.`,
        },
        all: { type: "boolean", description: "Wait until every one of them is final." },
      },
      required: ["ids"],
      additionalProperties: false,
    },
  },
  {
    type: "function",
    name: "close_agent",
    description: "Close an agent when it is no longer needed and return its last known status.",
    parameters: {
      type: "object",
      properties: { id: str("Agent id to close (from spawn_agent).") },
      required: ["id"],
      additionalProperties: false,
    },
  },
];

/** The names of the delegation tools. */
export const DELEGATION_TOOL_NAMES: readonly string[] = DEFINITIONS.map((d) => d.name);

type Args = Record<string, unknown>;

function checked(text: string, allowed: string[], required: string[]): Args {
  const a = parseArguments(text);
  for (const k of Object.keys(a)) {
    if (!allowed.includes(k)) {
      throw new ArgumentsError(`unknown argument '${k}' (expected ${allowed.join(", ")})`);
    }
  }
  for (const k of required) if (a[k] === undefined) throw new ArgumentsError(`'${k}' is required`);
  for (const k of ["message", "id", "agent_type", "model", "reasoning_effort"]) {
    if (a[k] !== undefined && (typeof a[k] !== "string" || a[k] === "")) {
      throw new ArgumentsError(`'${k}' must be a non-empty string`);
    }
  }
  for (const k of ["interrupt", "all"]) {
    if (a[k] !== undefined && typeof a[k] !== "boolean") {
      throw new ArgumentsError(`'${k}' must be a boolean`);
    }
  }
  return a;
}

const text = (t: string) => [{ type: "output_text", text: t }];

/** A call's valid arguments, with the subagent it names (when it names one). */
type Checked = Args & { sub?: Subagent };

/** The delegation tools of a root turn. */
export class DelegationTools implements ToolProvider {
  readonly #manager: SubagentManager;
  readonly #selfId: string;
  readonly #tools: Record<string, Tool<Checked>>;

  /** For the agent `selfId` (the root agent's id is its session's id). */
  constructor(manager: SubagentManager, selfId: string) {
    this.#manager = manager;
    this.#selfId = selfId;
    const me = selfId;
    // Each call's item is added only once its arguments are valid and the agent it names is
    // there (`valid`): a bad call has none; only its status says how it went.
    const tool = (
      prepare: (call: ToolCall) => Checked,
      fields: (a: Checked) => Record<string, unknown>,
      run: (a: Checked, context: ToolContext) => Promise<unknown>,
      precededBy?: (a: Checked) => Record<string, unknown>[],
    ): Tool<Checked> => ({
      prepare,
      item: { at: "valid", fields: (_, a) => fields(a!), answerIn: "status", precededBy },
      run: async (a, context) => ({ output: JSON.stringify(await run(a, context)) }),
    });
    this.#tools = {
      spawn_agent: tool(
        (call) =>
          checked(call.arguments, ["message", "agent_type", "model", "reasoning_effort"], [
            "message",
          ]),
        (a) => ({
          type: "create_subagent_call",
          agent_id: me,
          content: text(a.message as string),
          model: (a.model as string) ?? null,
          reasoning_effort: (a.reasoning_effort as string) ?? null,
        }),
        (a) => {
          const sub = this.#manager.spawn(me, a.message as string, {
            name: (a.agent_type as string) ?? null,
            model: (a.model as string) ?? null,
            reasoningEffort: (a.reasoning_effort as string) ?? null,
          });
          return Promise.resolve({ agent_id: sub.body.id, nickname: sub.body.name });
        },
      ),
      send_input: tool(
        (call) => {
          const a = checked(call.arguments, ["id", "message", "interrupt"], ["id", "message"]);
          return { ...a, sub: this.#sub(a.id) };
        },
        (a) => ({
          type: "send_subagent_input_call",
          sender_agent_id: me,
          recipient_agent_id: a.sub!.body.id,
          content: text(a.message as string),
        }),
        async (a) => {
          await this.#manager.send(a.sub!, a.message as string, a.interrupt === true);
          return { submission_id: newId("item") };
        },
        // Interrupting a subagent that is working is an item of its own, before the call's.
        (a) =>
          a.interrupt === true && a.sub!.turn
            ? [{
              type: "interrupt_subagent_call",
              sender_agent_id: me,
              recipient_agent_id: a.sub!.body.id,
            }]
            : [],
      ),
      resume_agent: tool(
        (call) => {
          const a = checked(call.arguments, ["id"], ["id"]);
          return { ...a, sub: this.#sub(a.id, false) };
        },
        (a) => ({ type: "resume_subagent_call", sender_agent_id: me, recipient_agent_id: a.id }),
        (a) => {
          this.#manager.resume(a.sub!);
          return Promise.resolve({ status: a.sub!.status });
        },
      ),
      close_agent: tool(
        (call) => {
          const a = checked(call.arguments, ["id"], ["id"]);
          return { ...a, sub: this.#sub(a.id, false) };
        },
        (a) => ({ type: "close_subagent_call", sender_agent_id: me, recipient_agent_id: a.id }),
        async (a) => ({ status: await this.#manager.close(a.sub!) }),
      ),
      wait: tool(
        (call) => {
          const a = checked(call.arguments, ["ids", "timeout_ms", "all"], ["ids"]);
          const ids = a.ids;
          if (
            !Array.isArray(ids) || ids.length === 0 || !ids.every((x) => typeof x === "string")
          ) {
            throw new ArgumentsError("'ids' must be a non-empty array of agent ids");
          }
          const t = a.timeout_ms;
          if (t !== undefined && (typeof t !== "number" || !(t > 0))) {
            throw new ArgumentsError("'timeout_ms' must be a positive number");
          }
          return a;
        },
        (a) => ({
          type: "wait_for_subagents_call",
          sender_agent_id: me,
          recipient_agent_ids: a.ids,
        }),
        async (a, context) => {
          const ids = a.ids as string[];
          const timeout = Math.min(
            (a.timeout_ms as number | undefined) ?? WAIT_TIMEOUT_MS.default,
            WAIT_TIMEOUT_MS.max,
          );
          const result = await this.#manager.wait(ids, a.all === true, timeout, context.signal);
          this.#deliver(ids, result.status, context);
          return { status: result.status, timed_out: result.timedOut };
        },
      ),
    };
  }

  /** The five tools. */
  definitions(): FunctionToolDefinition[] {
    return DEFINITIONS;
  }

  /** A call to one of them. */
  tool(name: string): Tool<Checked> | undefined {
    return Object.hasOwn(this.#tools, name) ? this.#tools[name] : undefined;
  }

  #sub(id: unknown, requireOpen = true): Subagent {
    const sub = this.#manager.get(id as string);
    if (!sub) throw new ToolError("not_found", `there is no agent with id '${id}'`);
    if (requireOpen && sub.body.status === "closed") {
      throw new ToolError("agent_closed", `agent '${id}' is closed; resume_agent it first`);
    }
    return sub;
  }

  /**
   * Each final answer a wait hands over is an `agent_message` from the subagent: the call's
   * output (the message, delivered once), not its record, so added here while the call runs.
   */
  #deliver(ids: string[], status: Record<string, AgentStatus>, context: ToolContext): void {
    for (const id of new Set(ids)) {
      const sub = this.#manager.get(id);
      const s = status[id];
      if (!sub || sub.undelivered === null || typeof s !== "object" || !("completed" in s)) {
        continue;
      }
      context.recorder.addItem({
        id: newId("message"),
        type: "agent_message",
        sender_agent_id: id,
        recipient_agent_id: this.#selfId,
        content: text(sub.undelivered),
      }, null);
      sub.undelivered = null;
    }
  }
}
