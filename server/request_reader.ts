/**
 * The request reader of every group but the agents group: JSON bodies checked by a zod object
 * schema, and the typed query parameters (booleans, integers, seconds). (`/v1/` requests are
 * read by `agents/v1_request_reader.ts`, in the OpenAI API's shapes: its query encoding and
 * error envelope.) Modelled on Hono's `validator`: one
 * place, zod schemas, one error shape. Every refusal is a 400 whose `param` names what was
 * wrong:
 *
 * - a body that is not a JSON object (not JSON, an array, a string): `invalid_request`,
 *   `param: "body"`, always the message `The body must be a JSON object`. An empty body is `{}`.
 * - an unknown field: `invalid_arguments`, `param` the field, and the nearest known field when
 *   one is close (`Unknown field "pahts"; did you mean "paths"?`). Objects are strict everywhere:
 *   the reader makes every body schema strict at its top level, and nested objects are declared
 *   with `z.strictObject`, so no field is ever silently ignored.
 * - a field of the wrong type or out of range: `invalid_arguments`, `param` the field's dotted
 *   path, zod's message.
 *
 * @module
 */

import type { Context } from "hono";
import { z } from "zod";
import { ApiError, unknownField } from "./errors.ts";
import type { ServerEnv } from "./state.ts";

/** The message of every body that is not a JSON object. */
export const NOT_A_JSON_OBJECT = "The body must be a JSON object";

/** A body schema: a zod object (made strict by the reader) or any schema of an object. */
type BodySchema = z.ZodType<Record<string, unknown>>;

const strictVersions = new WeakMap<z.ZodObject, z.ZodObject>();

/** The strict version of an object schema, made once per schema. */
function strict<T extends BodySchema>(schema: T): T {
  if (!(schema instanceof z.ZodObject)) return schema;
  let s = strictVersions.get(schema);
  if (!s) strictVersions.set(schema, s = schema.strict());
  return s as unknown as T;
}

/** The keys an object schema knows, for suggestions. */
function knownKeys(schema: BodySchema): string[] {
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/**
 * Parse a body's text with `schema`: the pure part of {@linkcode readBody}, for callers that
 * already hold the text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { parseBody } from "./request_reader.ts";
 * const Body = z.object({ path: z.string(), recursive: z.boolean().default(false) });
 * assert.deepEqual(parseBody('{"path":"a"}', Body), { path: "a", recursive: false });
 * assert.throws(() => parseBody('{"path":"a","recursiv":true}', Body), /did you mean "recursive"/);
 * assert.throws(() => parseBody("not json", Body), /The body must be a JSON object/);
 * ```
 */
export function parseBody<T extends BodySchema>(text: string, schema: T): z.output<T> {
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      raw = undefined;
    }
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ApiError("invalid_request", NOT_A_JSON_OBJECT, { param: "body" });
  }
  const parsed = strict(schema).safeParse(raw);
  if (parsed.success) return parsed.data;
  // An unknown field is reported first: it is most often a typo of a field also reported as
  // missing, and its name is what the caller needs to see.
  const issues = parsed.error.issues;
  const unknown = issues.find((i) => i.code === "unrecognized_keys");
  if (unknown?.code === "unrecognized_keys") {
    const at = unknown.path.length > 0 ? `${unknown.path.join(".")}.` : "";
    const known = unknown.path.length > 0 ? [] : knownKeys(schema);
    throw unknownField(`${at}${unknown.keys[0]}`, known);
  }
  const issue = issues[0];
  const param = issue.path.join(".") || "body";
  throw new ApiError("invalid_arguments", `${param}: ${issue.message}`, { param });
}

/**
 * Read the request's JSON body and check it with `schema` (made strict), refusing as the module
 * documentation says.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import type { ServerEnv } from "./state.ts";
 * import { z } from "zod";
 * import { readBody } from "./request_reader.ts";
 * const Body = z.object({ path: z.string() });
 * const app = new Hono<ServerEnv>().post("/", async (c) => c.json(await readBody(c, Body)));
 * const res = await app.request("/", { method: "POST", body: '{"path":"a"}' });
 * assert.deepEqual(await res.json(), { path: "a" });
 * ```
 */
export async function readBody<T extends BodySchema>(
  c: Context<ServerEnv>,
  schema: T,
): Promise<z.output<T>> {
  return parseBody(await c.req.text(), schema);
}

/**
 * A boolean query parameter: `true`/`false`/`1`/`0` (any case), `fallback` when absent or
 * empty, else 400 `invalid_arguments`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import type { ServerEnv } from "./state.ts";
 * import { queryBool } from "./request_reader.ts";
 * const app = new Hono<ServerEnv>().get("/", (c) => c.json(queryBool(c, "recursive", false)));
 * assert.equal(await (await app.request("/?recursive=true")).json(), true);
 * assert.equal(await (await app.request("/")).json(), false);
 * ```
 */
export function queryBool(c: Context<ServerEnv>, name: string, fallback: boolean): boolean {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return fallback;
  const v = raw.toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  throw new ApiError("invalid_arguments", `${name} must be true or false`, { param: name });
}

/**
 * An integer query parameter from `min` to `max`, `fallback` when absent or empty, else 400
 * `invalid_arguments`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import type { ServerEnv } from "./state.ts";
 * import { queryInt } from "./request_reader.ts";
 * const app = new Hono<ServerEnv>().get("/", (c) => c.json(queryInt(c, "depth", 1, 1, 16)));
 * assert.equal(await (await app.request("/?depth=3")).json(), 3);
 * assert.equal(await (await app.request("/")).json(), 1);
 * ```
 */
export function queryInt(
  c: Context<ServerEnv>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ApiError("invalid_arguments", `${name} must be an integer from ${min} to ${max}`, {
      param: name,
    });
  }
  return n;
}

/**
 * A duration query parameter in seconds (fractions allowed) from 0 to `max`, undefined when
 * absent or empty, else 400 `invalid_arguments`.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import type { ServerEnv } from "./state.ts";
 * import { querySeconds } from "./request_reader.ts";
 * const app = new Hono<ServerEnv>()
 *   .get("/", (c) => c.json(querySeconds(c, "timeout", 300) ?? "absent"));
 * assert.equal(await (await app.request("/?timeout=1.5")).json(), 1.5);
 * assert.equal(await (await app.request("/")).json(), "absent");
 * ```
 */
export function querySeconds(c: Context<ServerEnv>, name: string, max: number): number | undefined {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > max) {
    throw new ApiError("invalid_arguments", `${name} must be seconds from 0 to ${max}`, {
      param: name,
    });
  }
  return n;
}
