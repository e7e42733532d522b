/**
 * Finding the caller's terminal of a request, and the terminal service itself.
 *
 * @module
 */

import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import { TerminalManager } from "../../pty/manager.ts";
import type { Terminal } from "../../pty/session.ts";
import type { ServerEnv } from "../../state.ts";

/** The server's terminal service. */
export function terminals(c: Context<ServerEnv>): TerminalManager {
  return c.var.state.service("terminals", () => new TerminalManager());
}

/** The caller's terminal named by the `:id` parameter; `404 not_found` otherwise. */
export function findTerminal(c: Context<ServerEnv>): Terminal {
  const id = c.req.param("id") ?? "";
  const t = terminals(c).get(id, c.var.identity.id);
  if (!t) throw new ApiError("not_found", `No terminal ${id}`, { param: "id" });
  return t;
}
