/**
 * The options of `Sandbox.create`, `connect`, `list` and `killById`, and their validation.
 * Every bad value is refused with a `ValidationError` before anything starts.
 *
 * Units: every timeout of the `Sandbox` API is in seconds, as in the contract (`timeout` is the
 * sandbox's lifetime, `requestTimeout` bounds the create call only). The one exception is the
 * `ServerClient`'s own per-request `timeout` option, in milliseconds.
 *
 * @module
 */

import { ValidationError } from "../errors/mod.ts";
import { SANDBOX_STATUSES, type SandboxStatus } from "../models/sandbox.ts";
import type {
  ProviderCreateRequest,
  ProviderCredentials,
  SandboxProvider,
} from "../providers/types.ts";

/** The provider and credentials a call may carry. */
export interface SandboxConnectionOptions extends ProviderCredentials {
  /** A registered provider's name, or a provider; default `SANDBAR_PROVIDER`, else `local`. */
  provider?: string | SandboxProvider;
}

/** Options of `Sandbox.create`. */
export interface SandboxCreateOptions extends SandboxConnectionOptions {
  /** Template name (also the first argument of `create`); default `base`. */
  template?: string;
  /** Lifetime in seconds, 1 to 86400 (default 300). Not an HTTP timeout. */
  timeout?: number;
  /** Seconds the create call may take (default: the provider's, 60 for `local`). */
  requestTimeout?: number;
  /** String metadata, returned by `list` and `info`. */
  metadata?: Record<string, string>;
  /** Environment variables of every process in the sandbox. */
  envs?: Record<string, string>;
  /** CPU cores (recorded by `local`, not enforced). */
  cpu?: number;
  /** Memory in MB (recorded by `local`, not enforced). */
  memory?: number;
  /** Disk in MB (recorded by `local`, not enforced). */
  disk?: number;
  /** GPU specification (`local` has none: ProviderFeatureNotSupportedError). */
  gpu?: string;
  /** Port access needs the access token (default true). */
  secure?: boolean;
  /**
   * The in-sandbox server's policy: an object in the shape of the server's policy file, or a
   * preset name (`standard`, `readonly`, `minimal`, `open`). Its top-level keys replace the
   * provider's defaults (under `local`: the whole sandbox file system, system trees read-only).
   */
  policy?: Record<string, unknown> | string;
  /** A named-commands file (`.ts`, on this machine) for the in-sandbox server. */
  commandsFile?: string;
}

/** Options of `Sandbox.list`. */
export interface SandboxListOptions extends SandboxConnectionOptions {
  /** Only sandboxes in this status. */
  status?: SandboxStatus;
  /** At most this many (default 100, at most 10000). */
  limit?: number;
  /** Skip this many first (default 0). */
  offset?: number;
}

/** The longest lifetime, in seconds. */
export const MAX_LIFETIME = 86_400;

function integerIn(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/** A lifetime in seconds (1 to 86400). */
export function lifetime(value: unknown, name = "timeout"): number {
  return integerIn(name, value, 1, MAX_LIFETIME);
}

function stringMap(name: string, value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ValidationError(`${name} must be an object of strings`);
  }
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") throw new ValidationError(`${name}.${k} must be a string`);
  }
  return { ...(value as Record<string, string>) };
}

function optionalSize(name: string, value: unknown): number | undefined {
  return value === undefined ? undefined : integerIn(name, value, 1, 1_048_576);
}

/**
 * The provider request of `create`, validated, with the contract's defaults.
 *
 * @example
 * ```ts
 * import { createRequest } from "./options.ts";
 * createRequest("base", {}).timeout; // 300
 * ```
 */
export function createRequest(
  template: string,
  options: SandboxCreateOptions,
): ProviderCreateRequest {
  if (typeof template !== "string" || template === "") {
    throw new ValidationError("template must be a non-empty string");
  }
  for (const [name, value] of Object.entries(stringMap("envs", options.envs))) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || value.includes("\0")) {
      throw new ValidationError(`envs: ${JSON.stringify(name)} is not a valid variable`);
    }
  }
  const requestTimeout = options.requestTimeout;
  if (requestTimeout !== undefined && !(requestTimeout > 0 && requestTimeout <= 3600)) {
    throw new ValidationError("requestTimeout must be seconds, above 0 and at most 3600");
  }
  if (options.gpu !== undefined && typeof options.gpu !== "string") {
    throw new ValidationError("gpu must be a string");
  }
  if (options.policy !== undefined && typeof options.policy !== "string") {
    if (typeof options.policy !== "object" || options.policy === null) {
      throw new ValidationError("policy must be a policy object or a preset name");
    }
  }
  return {
    template,
    timeout: lifetime(options.timeout ?? 300),
    requestTimeout,
    metadata: stringMap("metadata", options.metadata),
    envs: stringMap("envs", options.envs),
    cpu: optionalSize("cpu", options.cpu),
    memory: optionalSize("memory", options.memory),
    disk: optionalSize("disk", options.disk),
    gpu: options.gpu,
    secure: options.secure ?? true,
    policy: options.policy,
    commandsFile: options.commandsFile,
  };
}

/** The list query, validated, with the contract's defaults. */
export function listQuery(options: SandboxListOptions) {
  if (options.status !== undefined && !SANDBOX_STATUSES.includes(options.status)) {
    throw new ValidationError(
      `status must be one of ${SANDBOX_STATUSES.join(", ")}, got ${options.status}`,
    );
  }
  return {
    status: options.status,
    limit: integerIn("limit", options.limit ?? 100, 1, 10_000),
    offset: integerIn("offset", options.offset ?? 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** The credentials part of an options object. */
export function credentialsOf(options: SandboxConnectionOptions): ProviderCredentials {
  const { apiKey, apiUrl, domain, accessKeyId, accessKeySecret } = options;
  return { apiKey, apiUrl, domain, accessKeyId, accessKeySecret };
}
