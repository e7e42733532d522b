/**
 * Wire schemas of the terminal group: the bodies of `POST /pty` and `POST /pty/:id/resize` and
 * the control messages a WebSocket client sends. Shapes are documented in
 * `docs/server/terminal.md`. Bodies are read by the server's one request reader
 * (`server/request_reader.ts`), so a refusal reads as in every other group.
 *
 * @module
 */

import { z } from "zod";

const dimension = z.number().int().min(1).max(1000);

/** Body of `POST /pty`. */
export const CreateBody = z.strictObject({
  cols: dimension.default(80),
  rows: dimension.default(24),
  shell: z.string().min(1).max(4096).default("/bin/bash"),
  args: z.array(z.string().max(65536)).max(64).default([]),
  // The path guard checks cwd (invalid_path and the rest).
  cwd: z.unknown().optional(),
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
