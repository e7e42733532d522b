/**
 * Validation through the compiled twins of the zod schemas in `schema.ts`, with failures worded as
 * `path: problem; ...`: the hot path of both sides of the protocol.
 *
 * @module
 */
import { z } from "zod";

/** The outcome of a validation: the value, or a message naming each problem by its path. */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

/**
 * Each schema's compiled twin, made on first use. `z.compile` generates a parser from the schema
 * itself, so the schemas stay the only statement of the rules; a value the generated parser
 * refuses is parsed again by zod's runtime, so errors read the same. It is three to ten times as
 * fast as the runtime parser on the messages of the hot path (`tests/engine/schema_compiled_test.ts`
 * holds the two to the same answers on a corpus of valid and invalid messages).
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
