/**
 * `client.commands`: the named commands a template registered on the server.
 *
 * @module
 */

import type { ServerCommand, ServerCommandArg } from "../models/core.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";

interface CommandWire {
  name: string;
  description?: string;
  args?: Record<string, { type: string; required?: boolean; description?: string }>;
}

function toCommand(raw: CommandWire): ServerCommand {
  const args: Record<string, ServerCommandArg> = {};
  for (const [name, a] of Object.entries(raw.args ?? {})) {
    args[name] = {
      type: a.type,
      required: a.required === true,
      description: a.description ?? null,
    };
  }
  return { name: raw.name, description: raw.description ?? "", args };
}

/**
 * Named commands: `GET /commands` and `POST /commands/<name>`.
 *
 * @example
 * ```ts ignore
 * const commands = await client.commands.list();
 * const sum = await client.commands.run<number>("add", { a: 1, b: 2 });
 * ```
 */
export class CommandsApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  /** The registered commands, sorted by name. */
  async list(options: CallOptions = {}): Promise<ServerCommand[]> {
    const body = await this.#t.json<{ commands: CommandWire[] }>(
      "commands_list",
      callRequest(options),
    );
    return body.commands.map(toCommand);
  }

  /**
   * Call a named command with keyword arguments and return its result value. An unknown name
   * throws `CommandNotFoundError`; bad arguments `ServerValidationError` naming the `param`.
   */
  run<T = unknown>(
    name: string,
    args: Record<string, unknown> = {},
    options: CallOptions = {},
  ): Promise<T> {
    return this.#t.json<T>("commands_run", {
      ...callRequest(options),
      params: { name },
      json: args,
    });
  }
}
