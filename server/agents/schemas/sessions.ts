/**
 * Request bodies of sessions and their input events (`/v1/agents/sessions…`), strict as the
 * API is.
 *
 * @module
 */

import { z } from "zod";
import { agentFields } from "./agents.ts";
import { metadataSchema } from "./common.ts";
import { environmentSettings } from "./environments.ts";

const contentSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("input_text"), text: z.string() }),
  z.strictObject({
    type: z.literal("input_image"),
    image_url: z.string().min(1),
    detail: z.enum(["low", "high", "auto"]).optional(),
  }),
]);

/** One user message. */
export const inputMessageSchema = z.strictObject({
  role: z.literal("user"),
  type: z.literal("message").optional(),
  content: z.array(contentSchema).min(1),
});

/** An input message as validated. */
export type InputMessageParam = z.output<typeof inputMessageSchema>;

const { name: _name, metadata: _metadata, ...sessionAgentFields } = agentFields;

/** `environment` of a session: no environment, an existing one, or one made for it. */
export const sessionEnvironmentSchemas = {
  none: z.strictObject({ type: z.literal("none") }),
  existing: z.strictObject({ type: z.literal("openai_hosted"), environment_id: z.string().min(1) }),
  own: z.strictObject({
    type: z.literal("openai_hosted"),
    environment_template_id: z.string().min(1).optional(),
    container_size: z.enum(["small", "medium", "large"]).optional(),
    ...environmentSettings,
  }),
};

/** `POST /v1/agents/sessions`. */
export const sessionCreateSchema = z.strictObject({
  environment: z.record(z.string(), z.unknown()),
  agent: z.strictObject({ model: z.string().min(1).optional(), ...sessionAgentFields }).optional(),
  agent_id: z.string().min(1).optional(),
  input: z.union([z.string().min(1), z.array(inputMessageSchema).min(1)]).nullish(),
  metadata: metadataSchema.nullish(),
  review: z.enum(["none", "auto_review"]).optional(),
  spend_control: z.strictObject({ limit: z.number().int().min(0).nullable() }).nullish(),
  stream: z.boolean().optional(),
  vault_ids: z.array(z.string().min(1)).max(10).nullish(),
});

/** `POST /v1/agents/sessions/{session_id}`. */
export const sessionUpdateSchema = z.strictObject({
  agent: z.strictObject({
    model: z.string().min(1).optional(),
    reasoning: z.strictObject({
      effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]).nullish(),
    }).optional(),
    service_tier: agentFields.service_tier,
    tools: agentFields.tools,
  }).optional(),
  metadata: metadataSchema.nullish(),
  review: z.enum(["none", "auto_review"]).optional(),
  spend_control: z.strictObject({ limit: z.number().int().min(0).nullable() }).nullish(),
});

/** One input event. */
export const inputEventSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("agent.session.input.message"),
    input: z.array(inputMessageSchema).min(1),
  }),
  z.strictObject({ type: z.literal("agent.session.input.cancel") }),
  z.strictObject({
    type: z.literal("agent.session.input.tool_result"),
    turn_id: z.string().min(1),
    call_id: z.string().min(1),
    success: z.boolean(),
    output: z.union([z.string(), z.array(z.record(z.string(), z.unknown()))]).nullish(),
    error: z.string().nullish(),
  }),
  z.strictObject({
    type: z.literal("agent.session.input.computer_use_approval_request_result"),
    request_id: z.string().min(1),
    response: z.record(z.string(), z.unknown()),
  }),
]);

/** `POST /v1/agents/sessions/{session_id}/events`. */
export const inputEventsSchema = z.strictObject({
  events: z.array(inputEventSchema).min(1).max(100),
});
