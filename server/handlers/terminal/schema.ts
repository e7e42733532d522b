/**
 * Wire schemas of the terminal group: the bodies of `POST /pty` and `POST /pty/:id/resize`, the
 * control messages a WebSocket client sends, and reading a JSON body against a schema with the
 * contract's `invalid_request` refusal. Shapes are documented in `docs/server/terminal.md`.
 *
 * @module
 */

import { z } from "zod";
import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import type { ServerEnv } from "../../state.ts";

const dimension = z.number().int().min(1).max(1000);

/** Body of `POST /pty`. */
export const CreateBody = z.strictObject({
  cols: dimension.default(80),
  rows: dimension.default(24),
  shell: z.string().min(1).max(4096).default("/bin/bash"),
  args: z.array(z.string().max(65536)).max(64).default([]),
  cwd: z.string().optional(),
  // The environment guard checks the map (env_invalid, env_var_denied, env_var_not_allowed).
  env: z.unknown().optional(),
  idle_timeout: z.number().int().min(1).max(86400).default(900),
});

/** Body of `POST /pty/:id/resize`, and the size of a `resize` control message. */
export const ResizeBody = z.strictObject({ cols: dimension, rows: dimension });

/** A control message from a WebSocket client (a text frame). */
export const ClientControl = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("input"), data: z.string() }),
  z.strictObject({ type: z.literal("resize"), cols: dimension, rows: dimension }),
  z.strictObject({ type: z.literal("ping") }),
]);

/** One line naming the first problem of a failed parse, and the parameter at fault. */
export function describeIssue(error: z.ZodError): { message: string; param?: string } {
  const issue = error.issues[0];
  const param = issue.path.length > 0 ? issue.path.join(".") : undefined;
  return { message: param ? `${param}: ${issue.message}` : issue.message, param };
}

/**
 * Read the request body as JSON and parse it with `schema`; an empty body counts as `{}`.
 * Refuses with `invalid_request` (400), naming the field at fault.
 *
 * @example
 * ```ts ignore
 * const body = await readBody(c, ResizeBody);
 * ```
 */
export async function readBody<T extends z.ZodType>(
  c: Context<ServerEnv>,
  schema: T,
): Promise<z.output<T>> {
  const text = await c.req.text();
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      throw new ApiError("invalid_request", "Body must be JSON");
    }
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const { message, param } = describeIssue(parsed.error);
    throw new ApiError("invalid_request", message, { param });
  }
  return parsed.data;
}
