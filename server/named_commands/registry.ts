/**
 * Named commands: functions a template author registers in the sandbox, listed by
 * `GET /commands` and called by `POST /commands/<name>` with JSON keyword arguments. (The
 * folder says "named" because "commands" alone also means shell commands: the command guard in
 * `guards/commands/`, the SDK's `sandbox.commands`. The contract keeps `commands` for the group
 * and the client module.)
 *
 * A command file given with `--commands FILE.ts` exports a default function that receives the
 * registry (so the file and the server share one registry whatever import path the file uses):
 *
 * ```ts
 * import assert from "node:assert/strict";
 * import { CommandRegistry } from "@sandbar/sandbar/server";
 *
 * export default function greetCommands(commands: CommandRegistry) {
 *   commands.register("greet", {
 *     description: "Say hello",
 *     args: { name: { type: "string", required: true } },
 *   }, ({ name }) => `hello ${name}`);
 * }
 *
 * // The server calls the file's default export with its registry:
 * const registry = new CommandRegistry();
 * greetCommands(registry);
 * assert.deepEqual(registry.names(), ["greet"]);
 * ```
 *
 * Scopes: a command may require scopes of its own (`scopes`), and the policy's
 * `commands.<name>.scopes` adds to them. A command registered with `guarded: true` is admitted
 * only through such a list: if neither the command nor the policy names any scope for it, every
 * call is refused with `scope_required`, because no identity could ever be admitted.
 *
 * @module
 */

import { ApiError, unknownField } from "../errors.ts";

/** The JSON types an argument may have. */
export type CommandArgType = "string" | "number" | "integer" | "boolean" | "object" | "array";

/** One argument of a named command. */
export interface CommandArg {
  /** JSON type. */
  type: CommandArgType;
  /** Whether the call must give it. */
  required?: boolean;
  /** For the listing. */
  description?: string;
}

/** What a command is registered with. */
export interface CommandDefinition {
  /** One line for the listing. */
  description: string;
  /** Keyword arguments by name; any other name is refused. */
  args?: Record<string, CommandArg>;
  /** Scopes the caller must hold, besides `commands:run`. */
  scopes?: string[];
  /** Admit only callers named by a scope list (see the module doc). */
  guarded?: boolean;
}

/** What a command function receives besides its arguments. */
export interface CommandContext {
  /** The calling identity's id. */
  identity: string;
  /** The server's root directory. */
  root: string;
  /** Fires when the client goes away. */
  signal: AbortSignal;
}

/** A command's implementation. Its return value is sent as the JSON response. */
export type CommandFunction = (
  // deno-lint-ignore no-explicit-any
  args: Record<string, any>,
  context: CommandContext,
) => unknown;

/** A registered command as listed by `GET /commands`. */
export interface CommandInfo {
  /** The name in `POST /commands/<name>`. */
  name: string;
  /** One line. */
  description: string;
  /** Arguments by name. */
  args: Record<string, CommandArg>;
}

interface Entry extends CommandInfo {
  scopes: string[];
  guarded: boolean;
  fn: CommandFunction;
}

const NAME = /^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/;

function typeOf(value: unknown): CommandArgType | "null" {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as CommandArgType;
}

/**
 * The registry of named commands.
 *
 * @example Registering and running a command
 * ```ts
 * import assert from "node:assert/strict";
 * import { CommandRegistry } from "./registry.ts";
 * const commands = new CommandRegistry();
 * commands.register("add", {
 *   description: "Add two numbers",
 *   args: { a: { type: "number", required: true }, b: { type: "number", required: true } },
 * }, ({ a, b }) => a + b);
 * const context = { identity: "default", root: "/", signal: new AbortController().signal };
 * assert.equal(await commands.run("add", { a: 2, b: 3 }, context), 5);
 * await assert.rejects(commands.run("add", { a: 2, c: 3 }, context), /Unknown argument "c"/);
 * ```
 */
export class CommandRegistry {
  readonly #entries = new Map<string, Entry>();
  #listing: string | undefined;

  /** Register a command; a name may be registered once. */
  register(name: string, definition: CommandDefinition, fn: CommandFunction): this {
    if (!NAME.test(name)) throw new Error(`command name "${name}" is not a valid name`);
    if (this.#entries.has(name)) throw new Error(`command "${name}" is already registered`);
    this.#entries.set(name, {
      name,
      description: definition.description,
      args: definition.args ?? {},
      scopes: definition.scopes ?? [],
      guarded: definition.guarded ?? false,
      fn,
    });
    this.#listing = undefined;
    return this;
  }

  /** The listing, sorted by name. */
  list(): CommandInfo[] {
    return [...this.#entries.values()]
      .map(({ name, description, args }) => ({ name, description, args }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * `GET /commands`'s body, serialized once per change of the registry (commands are registered
   * at start; the listing is asked for on every call).
   */
  listingJson(): string {
    return this.#listing ??= JSON.stringify({ commands: this.list() });
  }

  /** Names of every command. */
  names(): string[] {
    return [...this.#entries.keys()];
  }

  /** Whether a command exists. */
  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /**
   * The scopes a call needs, after the policy's list; throws `scope_required` for a guarded
   * command no list names a scope for, and `command_not_found` for an unknown name.
   */
  requiredScopes(name: string, policyScopes: readonly string[] | undefined): string[] {
    const entry = this.#entries.get(name);
    if (!entry) throw new ApiError("command_not_found", `Command not found: ${name}`);
    const scopes = [...entry.scopes, ...(policyScopes ?? [])];
    if (entry.guarded && scopes.length === 0) {
      throw new ApiError(
        "scope_required",
        `Command ${name} is guarded and no scope admits it; name one in the policy's commands.${name}.scopes`,
      );
    }
    return scopes;
  }

  /** Validate arguments and run the command. */
  async run(name: string, args: unknown, context: CommandContext): Promise<unknown> {
    const entry = this.#entries.get(name);
    if (!entry) throw new ApiError("command_not_found", `Command not found: ${name}`);
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      throw new ApiError("invalid_arguments", "Arguments must be a JSON object");
    }
    const given = args as Record<string, unknown>;
    for (const key of Object.keys(given)) {
      if (!Object.hasOwn(entry.args, key)) {
        throw unknownField(key, Object.keys(entry.args), "argument", ` for ${name}`);
      }
    }
    for (const [key, spec] of Object.entries(entry.args)) {
      const value = given[key];
      if (value === undefined) {
        if (spec.required) {
          throw new ApiError("invalid_arguments", `Missing argument "${key}" for ${name}`, {
            param: key,
          });
        }
        continue;
      }
      const got = typeOf(value);
      const ok = got === spec.type || (spec.type === "number" && got === "integer");
      if (!ok) {
        throw new ApiError(
          "invalid_arguments",
          `Argument "${key}" of ${name} must be ${spec.type}, got ${got}`,
          { param: key },
        );
      }
    }
    return await entry.fn(given, context);
  }
}
