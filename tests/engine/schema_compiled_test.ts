/**
 * The compiled parsers `check` uses must answer exactly as zod's runtime parser does for the same
 * schema: same verdict, same output, same issues. A corpus of valid messages is mutated in every
 * place (each property dropped, an unknown property added to each object, each value swapped for
 * values of other types and edge numbers) and every variant goes through both.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import {
  BudgetSchema,
  CoversResultSchema,
  DescriptionSchema,
  EngineResponseSchema,
  HostMessageSchema,
  ModelSchema,
  ProgressNotificationSchema,
  QuestionSchema,
  ResultSchema,
} from "../../engine/schema.ts";
import { compiledSchema } from "../../engine/validate.ts";

const question = {
  kind: "sweep",
  subject: "deposit",
  subjectKind: "action",
  schedule: "seed:7",
  modelSeed: 0,
  draws: "average",
  clockStep: 0.5,
  free: ["schedule", "inputs"],
  condition: { name: "no lost update", text: "balance == 2" },
  conditions: [{
    name: "c",
    features: [{ name: "f", type: "Real", unit: "s", domain: "0..1" }],
    assertions: [{ name: "a" }],
    pinned: [{ name: "p", text: "1" }],
  }],
  bindings: [{ name: "b", value: 1.5, unit: "m" }, { name: "t", value: true }],
  inputs: [{ name: "i" }],
  sweep: {
    ranges: [{ parameter: "x", type: "Real", unit: "s", from: 0, to: "10", step: false }],
    sampled: true,
    samples: 3,
    seed: 0,
    runs: 2,
  },
};
const model = {
  sources: { library: "1.0", documents: [{ path: "a.sysml", text: "part def A;" }] },
  graphs: {
    version: 1,
    subject: "deposit",
    actions: [{ name: "deposit", kind: "process", steps: [{ token: "t" }] }],
    states: [{ name: "balance", kind: "variable", initial: 0 }],
  },
};
const budget = { deadline: "2030-01-01T00:00:00+02:00", depth: 0, steps: 1, runs: 2, memory: 3 };
const result = {
  claim: "violated",
  strength: "witnessed",
  bounds: [{ name: "depth", limit: 20, reached: false }],
  witness: { schedules: ["step 1: a@n first of a@n"], at: 1, feature: "f", inputs: [] },
  executions: [{ schedules: [] }],
  reason: "r",
  values: [{ name: "v", value: "x" }],
  inputs: [{ name: "i", type: "t", sort: "s", domain: "d", free: true, optional: false }],
  assumptions: ["a"],
  elapsed: 12,
};
const description = {
  name: "explorer",
  version: "1.0.0",
  protocol: 1,
  answers: ["holds", "outcomes"],
  subjects: ["action"],
  bounds: ["depth", "runs"],
  witness: "schedule",
  model: ["graphs:1", "sources"],
  authority: "proved",
  concurrent: true,
};

const corpus: [string, z.ZodType<unknown>, unknown][] = [
  ["covers", HostMessageSchema, {
    jsonrpc: "2.0",
    id: 1,
    method: "covers",
    params: { question, model },
  }],
  ["run", HostMessageSchema, {
    jsonrpc: "2.0",
    id: 2,
    method: "run",
    params: { question, model, bounds: [{ name: "depth", limit: 0 }], budget },
  }],
  ["describe", HostMessageSchema, {
    jsonrpc: "2.0",
    id: 3,
    method: "describe",
    params: { protocols: [1, 2] },
  }],
  ["cancel", HostMessageSchema, { jsonrpc: "2.0", method: "cancel", params: { id: 4 } }],
  ["result response", EngineResponseSchema, { jsonrpc: "2.0", id: 5, result: { covers: true } }],
  ["error response", EngineResponseSchema, {
    jsonrpc: "2.0",
    id: 6,
    error: { code: "budget", message: "m" },
  }],
  ["progress", ProgressNotificationSchema, {
    jsonrpc: "2.0",
    method: "progress",
    params: { id: 7, runs: 0, depth: 1, steps: 2, text: "t" },
  }],
  ["covers result", CoversResultSchema, { covers: false, reason: "r" }],
  ["result", ResultSchema, result],
  ["description", DescriptionSchema, description],
  ["question", QuestionSchema, question],
  ["model", ModelSchema, model],
  ["budget", BudgetSchema, budget],
];

/** Values that stand in for any value: other types, edge numbers, near-misses of enums. */
const standIns: unknown[] = [
  undefined,
  null,
  true,
  0,
  -1,
  1,
  1.5,
  2 ** 53,
  Number.MAX_VALUE,
  Infinity,
  NaN,
  "",
  "2.0",
  "holds",
  "graphs:01",
  "2030-01-01",
  [],
  [1],
  ["x"],
  {},
  { name: "n" },
];

/** Every variant of `value`: each property dropped, one added, each value replaced. */
function* variants(value: unknown): Generator<unknown> {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      for (const inner of variants(value[i])) yield value.with(i, inner);
    }
    yield [...value, ...value.slice(0, 1)];
    if (value.length > 0) yield value.slice(1);
  } else if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    yield { ...record, unknownProperty: 1 };
    for (const key of Object.keys(record)) {
      const { [key]: _dropped, ...rest } = record;
      yield rest;
      for (const inner of variants(record[key])) yield { ...record, [key]: inner };
    }
  }
  yield* standIns;
}

function outcome(schema: z.ZodType<unknown>, value: unknown) {
  const parsed = schema.safeParse(value);
  return parsed.success
    ? { ok: true, data: parsed.data }
    : { ok: false, issues: parsed.error.issues };
}

Deno.test("compiled parsers answer as zod's runtime parser does, on valid and invalid messages", () => {
  let valid = 0;
  let invalid = 0;
  for (const [name, schema, message] of corpus) {
    const fast = compiledSchema(schema);
    assert.notEqual(fast, schema, `${name}: the compiled parser is a separate schema`);
    assert.equal(outcome(schema, message).ok, true, `${name}: the corpus entry itself is valid`);
    for (const variant of [message, ...variants(message)]) {
      const expected = outcome(schema, variant);
      assert.deepEqual(outcome(fast, variant), expected, `${name}: ${JSON.stringify(variant)}`);
      if (expected.ok) valid++;
      else invalid++;
    }
  }
  // The corpus reaches both sides of every rule, not only one.
  assert.ok(valid > 1000 && invalid > 5000, `${valid} valid, ${invalid} invalid`);
});

Deno.test("the schemas of the hot path compile to generated parsers, not the runtime fallback", () => {
  for (const [name, schema] of corpus) {
    assert.doesNotThrow(() => z.compile(schema, { strict: true }), name);
  }
});
