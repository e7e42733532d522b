/**
 * The terminal group: real pseudo-terminals over HTTP (create, list, get, resize, delete) and
 * their WebSocket on the PTY port. Wire shapes and the frame protocol: `docs/server/terminal.md`.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { GroupHandlers } from "../../pipeline/handler.ts";
import type { TerminalId } from "../../endpoints.ts";
import { ptyConnect } from "./connect.ts";
import { ptyCreate } from "./create.ts";
import { findTerminal, terminals } from "./lookup.ts";
import { readBody } from "../../request_reader.ts";
import { ResizeBody } from "./schema.ts";
import { viewTerminal } from "./view.ts";

/**
 * The terminal group's handlers.
 */
export const terminalHandlers: GroupHandlers<TerminalId> = {
  pty_create: ptyCreate,
  pty_list: (c) => {
    const url = c.var.state.addresses.ptyUrl;
    const list = terminals(c).list(c.var.identity.id).map((t) => viewTerminal(t, url));
    return c.json({ terminals: list });
  },
  pty_get: (c) => c.json(viewTerminal(findTerminal(c), c.var.state.addresses.ptyUrl)),
  pty_resize: async (c) => {
    const terminal = findTerminal(c);
    const size = await readBody(c, ResizeBody);
    if (!terminal.running) {
      throw new ApiError("conflict", `Terminal ${terminal.options.id} has exited`);
    }
    terminal.resize(size);
    return c.json(viewTerminal(terminal, c.var.state.addresses.ptyUrl));
  },
  pty_delete: async (c) => {
    const terminal = findTerminal(c);
    await terminals(c).remove(terminal, "deleted");
    return c.json(viewTerminal(terminal, c.var.state.addresses.ptyUrl));
  },
  pty_connect: ptyConnect,
};
