/**
 * Every message and object of External Engine Protocol v1 as a strict zod schema. This is the one
 * place the wire shapes are written down; the rest of the engine module works with the plain
 * interfaces of `types.ts`. Objects reject unknown properties (the contract's rule 7) except the
 * graph nodes, whose further fields the contract leaves to the engine.
 *
 * @module
 */
import { z } from "zod";
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

const id = z.number().int().min(1);
const count = z.number().int().min(0);

export const QUESTION_KINDS = [
  "evaluate",
  "outcomes",
  "holds",
  "sensitive",
  "satisfiable",
  "sweep",
  "compute",
] as const;
export const CLAIMS = [
  "none",
  "holds",
  "violated",
  "sensitive",
  "value",
  "table",
  "outcomes",
  "satisfiable",
  "unsatisfiable",
  "unbounded",
] as const;
/** Weakest first; the index is the order the verdict rules compare by. */
export const STRENGTHS = ["not covered", "observed", "witnessed", "bounded", "proved"] as const;
export const BOUND_NAMES = ["depth", "steps", "runs", "memory"] as const;
export const WITNESS_KINDS = ["schedule", "assignment", "none"] as const;
export const ERROR_CODES = ["unsupported", "budget", "internal"] as const;

/** `graphs:<n>` takes a positive integer without a leading zero. */
export const MODEL_FORM_PATTERN = /^(?:sources|rdf|graphs:[1-9][0-9]*)$/;

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
  draws: z.enum(["min", "max", "average"]).optional(),
  clockStep: z.number().gt(0).optional(),
  free: z.array(z.enum(["schedule", "inputs"])),
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
  deadline: z.iso.datetime({ offset: true }).optional(),
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

const jsonrpc = z.literal("2.0");

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
  z.strictObject({
    jsonrpc,
    id,
    method: z.literal("describe"),
    params: DescribeParamsSchema,
  }),
  z.strictObject({ jsonrpc, id, method: z.literal("covers"), params: CoversParamsSchema }),
  z.strictObject({ jsonrpc, id, method: z.literal("run"), params: RunParamsSchema }),
  z.strictObject({ jsonrpc, method: z.literal("cancel"), params: z.strictObject({ id }) }),
]);
export type HostMessage = z.infer<typeof HostMessageSchema>;

/**
 * A response envelope. The `result` is checked afterwards against the schema of the method it
 * answers, which only the host's pending request knows.
 */
export const ResponseSchema = z.strictObject({
  jsonrpc,
  id,
  result: z.unknown().optional(),
  error: ErrorObjectSchema.optional(),
}).refine((r) => ("result" in r) !== ("error" in r), {
  message: "a response carries exactly one of result and error",
});
export type Response = z.infer<typeof ResponseSchema>;

export const ProgressNotificationSchema = z.strictObject({
  jsonrpc,
  method: z.literal("progress"),
  params: ProgressSchema,
});

/** The results each request method answers with. */
export const RESULT_SCHEMAS = {
  describe: DescriptionSchema,
  covers: CoversResultSchema,
  run: ResultSchema,
} as const;

/** The outcome of a validation: the value, or a message naming each problem by its path. */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

/**
 * Each schema's compiled twin, made on first use. `z.compile` generates a parser from the schema
 * itself, so the schemas above stay the only statement of the rules; a value the generated parser
 * refuses is parsed again by zod's runtime, so errors read the same. It is three to ten times as
 * fast as the runtime parser on the messages of the hot path (`tests/engine/schema_test.ts` holds
 * the two to the same answers on a corpus of valid and invalid messages).
 */
const compiled = new WeakMap<z.ZodType, z.ZodType>();

/** The compiled twin of `schema`. */
export function compiledSchema<T>(schema: z.ZodType<T>): z.ZodType<T> {
  let fast = compiled.get(schema) as z.ZodType<T> | undefined;
  if (!fast) {
    fast = z.compile(schema);
    compiled.set(schema, fast);
  }
  return fast;
}

/** Validates `value` and words any failure as `path: problem; ...` under `label`. */
export function check<T>(schema: z.ZodType<T>, value: unknown, label: string): Checked<T> {
  const parsed = compiledSchema(schema).safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, message: formatIssues(parsed.error, label) };
}

/** Words zod issues as `label.path: message`, joined by `; `. */
export function formatIssues(error: z.ZodError, label: string): string {
  return error.issues.map((issue) => {
    const path = [label, ...issue.path.map(String)].filter((p) => p !== "").join(".");
    return `${path || "(root)"}: ${issue.message}`;
  }).join("; ");
}
