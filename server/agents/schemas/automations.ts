/**
 * Request bodies of automations (`/v1/agents/automations…`), strict as the API is. The
 * schedule's own rules (a 5-field cron expression, an IANA time zone, a future `run_at`) are
 * checked beside the scheduler, in `../automations/schedule.ts`, where the clock is.
 *
 * @module
 */

import { z } from "zod";
import { metadataSchema } from "./common.ts";
import { inputMessageSchema, sessionCreateSchema } from "./sessions.ts";

/** A target that creates a session per invocation. */
export const newSessionTargetSchema = z.strictObject({
  type: z.literal("new_session"),
  environment: sessionCreateSchema.shape.environment,
  input: z.array(inputMessageSchema).min(1),
  agent: sessionCreateSchema.shape.agent,
  agent_id: z.string().min(1).optional(),
  metadata: metadataSchema.nullish(),
  vault_ids: z.array(z.string().min(1)).max(10).nullish(),
});

/** A target that posts instructions into an existing session. */
export const existingSessionTargetSchema = z.strictObject({
  type: z.literal("existing_session"),
  session_id: z.string().min(1),
  instructions: z.string().min(1).max(256 * 1024),
});

/** `target` of a create or an update. */
export const targetSchema = z.discriminatedUnion("type", [
  newSessionTargetSchema,
  existingSessionTargetSchema,
]);

/** A target as validated. */
export type TargetParam = z.output<typeof targetSchema>;

const name = z.string().min(1).max(256);

/** `POST /v1/agents/automations`. */
export const automationCreateSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("periodic"),
    name,
    expression: z.string(),
    timezone: z.string(),
    target: targetSchema,
    metadata: metadataSchema.optional(),
  }),
  z.strictObject({
    type: z.literal("once"),
    name,
    run_at: z.number().int(),
    target: targetSchema,
    metadata: metadataSchema.optional(),
  }),
]);

/** A create body, validated. */
export type AutomationCreate = z.output<typeof automationCreateSchema>;

/** `POST /v1/agents/automations/{automation_id}`: omitted fields stay. */
export const automationUpdateSchema = z.strictObject({
  name: name.optional(),
  expression: z.string().optional(),
  timezone: z.string().optional(),
  run_at: z.number().int().optional(),
  target: targetSchema.optional(),
  metadata: metadataSchema.optional(),
});

/** An update body, validated. */
export type AutomationUpdate = z.output<typeof automationUpdateSchema>;

/** `pause`, `resume` and `invocations.create` take no body; an empty object is accepted. */
export const emptyBodySchema = z.strictObject({});
