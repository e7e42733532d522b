/**
 * `client.commands`: the named commands a template registered on the server.
 *
 * Words in the SDK, one meaning each: a *command* is a shell command line run in the sandbox
 * (`sandbox.commands`, `CommandsModule`, `CommandHandle`); a *named command* is a
 * function a template registered on the in-sandbox server, called by name with keyword
 * arguments (this `NamedCommandsApi`, the `NamedCommand` model, `sandbox.run` and
 * `sandbox.listCommands`). Only the public property names `sandbox.commands` (E2B's) and
 * `client.commands` (the server's `commands` group) keep the bare word for both; every type and
 * file says which one it means.
 *
 * @module
 */

import type { NamedCommand, NamedCommandArg } from "../models/core.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";

interface CommandWire {
  name: string;
  description?: string;
  args?: Record<string, { type: string; required?: boolean; description?: string }>;
}

function toCommand(raw: CommandWire): NamedCommand {
  const args: Record<string, NamedCommandArg> = {};
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
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * const commandsFile = await Deno.makeTempFile({ suffix: ".ts" });
 * await Deno.writeTextFile(
 *   commandsFile,
 *   `export default (commands) => commands.register("add", {
 *      args: { a: { type: "number", required: true }, b: { type: "number", required: true } },
 *    }, ({ a, b }) => a + b);`,
 * );
 * await using sandbox = await Sandbox.create({ commandsFile });
 * const client = sandbox.server;
 * assert.deepEqual((await client.commands.list()).map((c) => c.name), ["add"]);
 * assert.equal(await client.commands.run<number>("add", { a: 1, b: 2 }), 3);
 * assert.equal(await sandbox.run<number>("add", { a: 2, b: 3 }), 5); // the same, from the sandbox
 * ```
 */
export class NamedCommandsApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  /** The registered commands, sorted by name. */
  async list(options: CallOptions = {}): Promise<NamedCommand[]> {
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
