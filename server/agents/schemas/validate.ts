/**
 * Checking a value against a `/v1/` schema, with the OpenAI API's refusals: an unknown field
 * (`Unknown parameter: 'x'.`), a missing one, or one of the wrong shape, each naming the field in
 * `param`. The request reader (`v1_request_reader.ts`) checks bodies with it, and the domain
 * (`domain/sessions.ts`) checks the parts of a create it reads later; it knows nothing of HTTP.
 *
 * @module
 */

import type { z } from "zod";
import { invalid } from "../errors.ts";

/** The dotted path of a zod issue, as the OpenAI API names params (`tools[0].type`). */
function paramOf(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? String(p) : `.${String(p)}`;
  }
  return out;
}

/**
 * Validate a value against a schema, throwing `invalid_request` naming the field.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { validate } from "./validate.ts";
 * const schema = z.strictObject({ name: z.string() });
 * assert.throws(() => validate(schema, { name: "a", nme: 1 }), /Unknown parameter: 'nme'/);
 * assert.throws(() => validate(schema, {}), /Missing required parameter: 'name'/);
 * assert.throws(() => validate(schema, { name: ["a"] }), /Invalid 'name': .*expected string/);
 * ```
 */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue.code === "unrecognized_keys") {
    const param = paramOf([...issue.path, issue.keys[0]]);
    throw invalid(param, `Unknown parameter: '${param}'.`);
  }
  const param = paramOf(issue.path);
  // zod does not report the input it refused, so whether the field is there is read from the
  // input itself: a field of the wrong shape is not "missing".
  if (issue.code === "invalid_type" && valueAt(input, issue.path) === undefined) {
    throw invalid(param, `Missing required parameter: '${param}'.`);
  }
  throw invalid(param || null, `Invalid '${param || "body"}': ${issue.message}.`);
}

/** The value at `path` in `input`, or `undefined` when any step of it is absent. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
