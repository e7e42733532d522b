/**
 * Request bodies of `POST /v1/agents` and `POST /v1/agents/{agent_id}`, strict as the API is.
 *
 * @module
 */

import { z } from "zod";
import { metadataSchema } from "./common.ts";

const mcpTransportSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("http"),
    server_url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).nullish().refine(
      (h) => !h || !Object.keys(h).some((k) => k.toLowerCase() === "authorization"),
      {
        message:
          "an Authorization header is a secret and is never stored on an agent; keep the token in a vault credential and set credential_id",
      },
    ),
  }),
  z.strictObject({
    type: z.literal("stdio"),
    command: z.string().min(1),
    cwd: z.string().min(1),
    args: z.array(z.string()).nullish(),
    env_vars: z.array(z.string()).nullish(),
  }),
]);

const toolSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("function"),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1 to 64 letters, digits, _ or -"),
    description: z.string(),
    parameters: z.record(z.string(), z.unknown()),
    async: z.boolean().optional(),
    defer_loading: z.boolean().optional(),
  }),
  z.strictObject({ type: z.literal("tool_search") }),
  z.strictObject({ type: z.literal("programmatic_tool_calling"), enabled: z.boolean().optional() }),
  z.strictObject({
    type: z.literal("mcp"),
    server_label: z.string().min(1),
    transport: mcpTransportSchema,
    allowed_tools: z.array(z.string()).nullish(),
    connection_origin: z.enum(["service", "environment"]).nullish(),
    credential_id: z.string().nullish(),
    request_metadata: z.record(z.string(), z.unknown()).nullish(),
    required: z.boolean().optional(),
  }),
  z.strictObject({
    type: z.literal("web_search"),
    allowed_domains: z.array(z.string()).nullish(),
    context_size: z.enum(["low", "medium", "high"]).nullish(),
    location: z.strictObject({
      city: z.string().nullish(),
      country: z.string().nullish(),
      region: z.string().nullish(),
      timezone: z.string().nullish(),
    }).nullish(),
    mode: z.enum(["disabled", "cached", "live"]).nullish(),
  }),
  z.strictObject({ type: z.literal("computer_use"), include_screenshots: z.boolean().optional() }),
  z.strictObject({ type: z.literal("automations") }),
]);

/** The fields an agent configuration takes, shared with a session's inline agent. */
export const agentFields = {
  compaction: z.strictObject({ async: z.boolean().nullish() }).nullish(),
  experimental: z.strictObject({ time_awareness: z.boolean().optional() }).optional(),
  instructions: z.string().nullish(),
  metadata: metadataSchema.nullish(),
  multi_agent: z.strictObject({
    enabled: z.boolean(),
    max_concurrent_subagents: z.number().int().min(1).max(64).optional(),
  }).nullish(),
  name: z.string().max(256).nullish(),
  reasoning: z.strictObject({
    effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]).nullish(),
    summary: z.enum(["concise", "detailed", "auto"]).nullish(),
  }).nullish(),
  service_tier: z.enum(["auto", "default", "flex", "priority", "fast", "ultrafast"]).nullish(),
  text: z.strictObject({
    format: z.discriminatedUnion("type", [
      z.strictObject({ type: z.literal("text") }),
      z.strictObject({
        type: z.literal("json_schema"),
        schema: z.record(z.string(), z.unknown()),
      }),
    ]).nullish(),
    verbosity: z.enum(["low", "medium", "high"]).nullish(),
  }).nullish(),
  tools: z.array(toolSchema).nullish(),
};

/** `POST /v1/agents`. */
export const agentCreateSchema = z.strictObject({ model: z.string().min(1), ...agentFields });

/** `POST /v1/agents/{agent_id}`: every field optional; omitted means unchanged. */
export const agentUpdateSchema = z.strictObject({
  model: z.string().min(1).optional(),
  ...agentFields,
});

/** A create body, validated. */
export type AgentCreate = z.output<typeof agentCreateSchema>;
/** An update body, validated. */
export type AgentUpdate = z.output<typeof agentUpdateSchema>;
