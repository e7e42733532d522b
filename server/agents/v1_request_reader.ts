/**
 * The request reader of the agents group, where `/v1/` requests are read and checked (every
 * other group's is `server/request_reader.ts`): JSON bodies against strict zod
 * schemas (an unknown field is refused with its name, as the OpenAI API does), and query
 * strings as the official client encodes them (`qs` with brackets: `metadata[key]=value`,
 * `status[]=a&status[]=b`, percent-encoded). Every refusal names the field in `param`.
 *
 * @module
 */

import type { Context } from "hono";
import type { z } from "zod";
import type { ServerEnv } from "../state.ts";
import { invalid } from "./errors.ts";
import { validate } from "./schemas/validate.ts";

/** A parsed body with the exact text it came from (the idempotency check hashes the text). */
export interface ParsedBody<T> {
  /** The validated value. */
  value: T;
  /** The body as sent. */
  text: string;
}

/**
 * Read and validate a JSON body. An empty body is `{}` (the client sends none for some
 * updates).
 */
export async function readJson<S extends z.ZodType>(
  c: Context<ServerEnv>,
  schema: S,
): Promise<ParsedBody<z.output<S>>> {
  const text = await c.req.raw.text();
  let input: unknown = {};
  if (text.trim() !== "") {
    try {
      input = JSON.parse(text);
    } catch {
      throw invalid(
        null,
        "We could not parse the JSON body of your request. The body must be valid JSON.",
      );
    }
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw invalid(null, "The request body must be a JSON object.");
  }
  return { value: validate(schema, input), text };
}

/** A query string decoded the way `qs` (brackets mode) encoded it. */
export interface ParsedQuery {
  /** Plain parameters. */
  plain: Map<string, string>;
  /** `name[]=v` lists, by name. */
  lists: Map<string, string[]>;
  /** `name[key]=v` maps, by name. */
  maps: Map<string, Map<string, string>>;
}

/**
 * Decode a query string, refusing any parameter not in `allowed` (plain, `name[]` or
 * `name[key]` forms are admitted by their base name).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseQuery } from "./v1_request_reader.ts";
 * const q = parseQuery("limit=2&metadata%5Bteam%5D=a&status%5B%5D=active", ["limit", "metadata", "status"]);
 * assert.equal(q.maps.get("metadata")?.get("team"), "a");
 * assert.deepEqual(q.lists.get("status"), ["active"]);
 * ```
 */
export function parseQuery(search: string, allowed: readonly string[]): ParsedQuery {
  const out: ParsedQuery = { plain: new Map(), lists: new Map(), maps: new Map() };
  for (const [name, value] of new URLSearchParams(search)) {
    const m = /^([^[\]]+)(?:\[([^\]]*)\])?$/.exec(name);
    if (!m || !allowed.includes(m[1])) {
      throw invalid(name, `Unknown query parameter: '${name}'.`);
    }
    const [, base, key] = m;
    if (key === undefined) {
      out.plain.set(base, value);
    } else if (key === "") {
      const list = out.lists.get(base) ?? [];
      list.push(value);
      out.lists.set(base, list);
    } else {
      const map = out.maps.get(base) ?? new Map<string, string>();
      map.set(key, value);
      out.maps.set(base, map);
    }
  }
  return out;
}
