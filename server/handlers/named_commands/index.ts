/**
 * The commands group: `GET /commands` lists the named commands, `POST /commands/<name>` runs
 * one with the JSON body as keyword arguments and answers with its result value as JSON.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { z } from "zod";
import { missingScope } from "../../policy/scopes.ts";
import { readBody } from "../../request_reader.ts";
import type { GroupHandlers } from "../../pipeline/handler.ts";
import type { CommandsId } from "../../endpoints.ts";

const ArgumentsBody = z.record(z.string(), z.unknown());

/** The commands group's handlers. */
export const commandsHandlers: GroupHandlers<CommandsId> = {
  commands_list: (c) =>
    c.body(c.get("state").commands.listingJson(), 200, { "content-type": "application/json" }),
  commands_run: async (c) => {
    const state = c.get("state");
    const name = c.req.param("name") ?? "";
    const identity = c.get("identity");
    const needed = state.commands.requiredScopes(name, state.policy.commandScopes[name]);
    const lacking = missingScope(identity.scopes, needed);
    if (lacking) {
      throw new ApiError("missing_scope", `Command ${name} needs scope ${lacking}`, {
        scope: lacking,
      });
    }
    // Any object here; the command's own argument list refuses unknown and wrong arguments.
    const args = await readBody(c, ArgumentsBody);
    const result = await state.commands.run(name, args, {
      identity: identity.id,
      root: state.root,
      signal: c.req.raw.signal,
    });
    return c.json(result === undefined ? null : result);
  },
};
