/**
 * `pty_create`: every input through the guards the process and file groups use, then a
 * terminal. The shell is a program like `argv[0]` of `process_start` (command rules), the
 * working directory a path like any other (path guard, and it must be a directory), the
 * environment the one every new process gets plus the request's guarded `env`.
 *
 * Note for operators: a terminal runs whatever is typed into it, so the command rules can only
 * decide whether the shell itself may start; with `allow_commands` set, allowing `bash` there
 * allows everything bash can run.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { TooManyTerminalsError } from "../../pty/manager.ts";
import { readBody } from "../../request_reader.ts";
import { guardCwd } from "../../process/start.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { guardShell, shellEnvironment } from "./guards.ts";
import { terminals } from "./lookup.ts";
import { confinements } from "../../confine/confinement.ts";
import { CreateBody } from "./schema.ts";
import { viewTerminal } from "./view.ts";

/** The `pty_create` handler. */
export const ptyCreate: EndpointHandler = async (c) => {
  const state = c.var.state;
  const body = await readBody(c, CreateBody);
  const cwd = await guardCwd(state, body.cwd);
  const env = shellEnvironment(state, body.env);
  const program = guardShell(state, body.shell, body.args, cwd, env);
  let terminal;
  try {
    terminal = terminals(c).start({
      owner: c.var.identity.id,
      shell: program,
      args: body.args,
      cwd,
      env: confinements(state).environment(c.var.identity.id, env),
      size: { cols: body.cols, rows: body.rows },
      idleTimeoutMs: body.idle_timeout * 1000,
      spawner: confinements(state).spawner(c.var.identity.id) ?? undefined,
    });
  } catch (e) {
    if (e instanceof TooManyTerminalsError) {
      throw new ApiError("concurrency_limited", e.message, { retryAfter: 5 });
    }
    throw new ApiError("internal", `Could not open a terminal: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return c.json(viewTerminal(terminal, state.addresses.ptyUrl), 201);
};
