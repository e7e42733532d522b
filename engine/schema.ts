/**
 * Every message and object of External Engine Protocol v1 as a strict zod schema. This is the one
 * place the wire shapes are written down; the rest of the engine module works with the plain
 * interfaces of `types.ts`. Objects reject unknown properties (the contract's rule 7) except the
 * graph nodes, whose further fields the contract leaves to the engine.
 *
 * @module
 */
import { z } from "zod";
import { parseRfc3339 } from "./rfc3339.ts";
import {
  BOUND_NAMES,
  CLAIMS,
  DRAW_MODES,
  ERROR_CODES,
  FREE_PARTS,
  MODEL_FORM_PATTERN,
  QUESTION_KINDS,
  STRENGTHS,
  WITNESS_KINDS,
} from "./enums.ts";
import { notificationSchema, RequestIdSchema, requestSchema, responseSchema } from "./jsonrpc.ts";
import type {
  Bound,
  Budget,
  CoversResult,
  Description,
  ErrorObject,
  Graphs,
  Model,
  Progress,
  Question,
  Result,
  Value,
  Witness,
} from "./types.ts";

const id = RequestIdSchema;
const count = z.number().int().min(0);

const questionKind = z.enum(QUESTION_KINDS);
const strength = z.enum(STRENGTHS);
const boundName = z.enum(BOUND_NAMES);
const modelForm = z.string().regex(MODEL_FORM_PATTERN, "expected sources, rdf or graphs:<n>");
const scalar = z.union([z.number(), z.boolean(), z.string()]);

export const ValueSchema: z.ZodType<Value> = z.strictObject({
  name: z.string(),
  value: scalar,
  unit: z.string().optional(),
});

const freeInput = z.strictObject({
  name: z.string(),
  type: z.string().optional(),
  unit: z.string().optional(),
  domain: z.string().optional(),
});
const condition = z.strictObject({ name: z.string(), text: z.string().optional() });

export const QuestionSchema: z.ZodType<Question> = z.strictObject({
  kind: questionKind,
  subject: z.string(),
  subjectKind: z.string().optional(),
  schedule: z.string(),
  modelSeed: count.optional(),
  draws: z.enum(DRAW_MODES).optional(),
  clockStep: z.number().gt(0).optional(),
  free: z.array(z.enum(FREE_PARTS)),
  condition: condition.optional(),
  conditions: z.array(z.strictObject({
    name: z.string(),
    features: z.array(freeInput),
    assertions: z.array(condition),
    pinned: z.array(z.strictObject({ name: z.string(), text: z.string() })).optional(),
  })).optional(),
  bindings: z.array(ValueSchema).optional(),
  inputs: z.array(freeInput).optional(),
  sweep: z.strictObject({
    ranges: z.array(z.strictObject({
      parameter: z.string(),
      type: z.string(),
      unit: z.string().optional(),
      from: scalar,
      to: scalar,
      step: scalar.optional(),
    })),
    sampled: z.boolean().optional(),
    samples: count.optional(),
    seed: count.optional(),
    runs: count.optional(),
  }).optional(),
});

const graphNode = z.looseObject({ name: z.string(), kind: z.string() });

export const GraphsSchema: z.ZodType<Graphs> = z.strictObject({
  version: z.number().int().min(1),
  subject: z.string(),
  actions: z.array(graphNode).optional(),
  states: z.array(graphNode).optional(),
});

export const ModelSchema: z.ZodType<Model> = z.strictObject({
  sources: z.strictObject({
    library: z.string(),
    documents: z.array(z.strictObject({ path: z.string(), text: z.string() })),
  }).optional(),
  graphs: GraphsSchema.optional(),
});

export const BoundSchema: z.ZodType<Bound> = z.strictObject({
  name: z.string(),
  limit: z.number().int(),
  reached: z.boolean().optional(),
});

export const BudgetSchema: z.ZodType<Budget> = z.strictObject({
  deadline: z.string().refine((text) => parseRfc3339(text) !== undefined, {
    message: "expected an RFC 3339 date-time with an offset",
  }).optional(),
  depth: count.optional(),
  steps: count.optional(),
  runs: count.optional(),
  memory: count.optional(),
  jobs: count.optional(),
});

export const WitnessSchema: z.ZodType<Witness> = z.strictObject({
  schedules: z.array(z.string()).optional(),
  at: count.optional(),
  feature: z.string().optional(),
  inputs: z.array(ValueSchema).optional(),
});

export const ResultSchema: z.ZodType<Result> = z.strictObject({
  claim: z.enum(CLAIMS),
  strength,
  bounds: z.array(BoundSchema).optional(),
  witness: WitnessSchema.optional(),
  executions: z.array(WitnessSchema).optional(),
  reason: z.string().optional(),
  values: z.array(ValueSchema).optional(),
  inputs: z.array(z.strictObject({
    name: z.string(),
    type: z.string().optional(),
    sort: z.string().optional(),
    domain: z.string().optional(),
    free: z.boolean().optional(),
    optional: z.boolean().optional(),
    value: z.string().optional(),
  })).optional(),
  assumptions: z.array(z.string()).optional(),
  elapsed: count.optional(),
});

export const CoversResultSchema: z.ZodType<CoversResult> = z.strictObject({
  covers: z.boolean(),
  reason: z.string().optional(),
});

export const DescriptionSchema: z.ZodType<Description> = z.strictObject({
  name: z.string().min(1),
  version: z.string().min(1),
  protocol: z.number().int().min(1),
  answers: z.array(questionKind).min(1),
  subjects: z.array(z.string()).optional(),
  bounds: z.array(boundName).optional(),
  witness: z.enum(WITNESS_KINDS).optional(),
  model: z.array(modelForm).optional(),
  authority: strength.optional(),
  concurrent: z.boolean().optional(),
});

export const ErrorObjectSchema: z.ZodType<ErrorObject> = z.strictObject({
  code: z.enum(ERROR_CODES),
  message: z.string(),
});

export const ProgressSchema: z.ZodType<Progress> = z.strictObject({
  id,
  runs: count.optional(),
  depth: count.optional(),
  steps: count.optional(),
  text: z.string().optional(),
});

export const DescribeParamsSchema: z.ZodType<{ protocols: number[] }> = z.strictObject({
  protocols: z.array(z.number().int().min(1)).min(1),
});
export const CoversParamsSchema: z.ZodType<{ question: Question; model: Model }> = z.strictObject({
  question: QuestionSchema,
  model: ModelSchema,
});
export const RunParamsSchema: z.ZodType<
  { question: Question; model: Model; bounds: Bound[]; budget: Budget }
> = z.strictObject({
  question: QuestionSchema,
  model: ModelSchema,
  bounds: z.array(BoundSchema),
  budget: BudgetSchema,
});

/** A host message: one of the three requests or a `cancel` notification. */
export const HostMessageSchema = z.discriminatedUnion("method", [
  requestSchema("describe", DescribeParamsSchema),
  requestSchema("covers", CoversParamsSchema),
  requestSchema("run", RunParamsSchema),
  notificationSchema("cancel", z.strictObject({ id })),
]);
/** A validated host message. */
export type HostMessage = z.infer<typeof HostMessageSchema>;

/**
 * An engine's response envelope. The `result` is checked afterwards against the schema of the
 * method it answers, which only the host's pending request knows.
 */
export const EngineResponseSchema = responseSchema(ErrorObjectSchema);
/** A validated response envelope (named so as not to shadow the global `Response`). */
export type EngineResponse = z.infer<typeof EngineResponseSchema>;

/** A `progress` notification from the engine. */
export const ProgressNotificationSchema = notificationSchema("progress", ProgressSchema);

/** The results each request method answers with. */
export const RESULT_SCHEMAS = {
  describe: DescriptionSchema,
  covers: CoversResultSchema,
  run: ResultSchema,
} as const;
