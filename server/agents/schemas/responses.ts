/**
 * Request bodies of `POST /v1/responses` and `POST /v1/responses/input_tokens`. The top level
 * is strict (an unknown parameter is refused by name, as the API does); nested values are the
 * upstream's to judge, since the server passes them on unchanged.
 *
 * @module
 */

import { z } from "zod";

const passed = z.unknown().optional();

const inputItem = z.looseObject({ id: z.string().optional() });

/** `POST /v1/responses`. */
export const responseCreateSchema = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItem)]).optional(),
  store: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  background: z.boolean().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  access_programs: passed,
  context_management: passed,
  conversation: passed,
  image: passed,
  include: passed,
  instructions: passed,
  max_output_tokens: passed,
  max_tool_calls: passed,
  moderation: passed,
  parallel_tool_calls: passed,
  previous_response_id: passed,
  prompt: passed,
  prompt_cache_key: passed,
  prompt_cache_options: passed,
  prompt_cache_retention: passed,
  reasoning: passed,
  safety_identifier: passed,
  service_tier: passed,
  stream_options: passed,
  temperature: passed,
  text: passed,
  tool_choice: passed,
  tools: passed,
  top_logprobs: passed,
  top_p: passed,
  truncation: passed,
  user: passed,
});

/** `POST /v1/responses/input_tokens`. */
export const inputTokensSchema = z.strictObject({
  conversation: passed,
  input: passed,
  instructions: passed,
  model: passed,
  parallel_tool_calls: passed,
  personality: passed,
  previous_response_id: passed,
  reasoning: passed,
  text: passed,
  tool_choice: passed,
  tools: passed,
  truncation: passed,
});
