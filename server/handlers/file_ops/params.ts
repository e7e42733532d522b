/**
 * Reading the file endpoints' inputs: boolean and integer query parameters, and JSON bodies
 * checked by a zod schema, each refusal a 400 with the parameter named.
 *
 * @module
 */

import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "../../errors.ts";
import type { ServerEnv } from "../../state.ts";

/**
 * A boolean query parameter: `true`/`false`/`1`/`0`, else 400 `invalid_arguments`.
 *
 * @example
 * ```ts ignore
 * const recursive = queryBool(c, "recursive", false);
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
 * An integer query parameter within bounds, else 400 `invalid_arguments`.
 *
 * @example
 * ```ts ignore
 * const depth = queryInt(c, "depth", 1, 1, 16);
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
 * The JSON body, checked by `schema`.
 *
 * @example
 * ```ts ignore
 * const body = await jsonBody(c, z.object({ path: z.string() }));
 * ```
 */
export async function jsonBody<T>(c: Context<ServerEnv>, schema: z.ZodType<T>): Promise<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(await c.req.text());
  } catch {
    throw new ApiError("invalid_request", "The body must be a JSON object");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue.path.join(".") || undefined;
    throw new ApiError("invalid_arguments", `${param ?? "body"}: ${issue.message}`, { param });
  }
  return parsed.data;
}
