/**
 * The options of `Sandbox.create`, `connect`, `list` and `killById`, and their validation.
 * Every bad value is refused with a `ValidationError` before anything starts.
 *
 * Units: every timeout of the SDK is in seconds: `timeout` is the sandbox's lifetime,
 * `requestTimeout` bounds the create call only (when absent: `httpTimeout`, else the
 * `SANDBOX_HTTP_TIMEOUT` environment variable, else the provider's default), and the
 * `ServerClient`'s `timeout` bounds one HTTP request. A value over 86400 is refused as
 * probably milliseconds.
 *
 * Options that are not known are refused with the nearest known name (`timeoutMs` →
 * `timeout`), never ignored.
 *
 * @module
 */

import { ValidationError } from "../errors/mod.ts";
import { checkOptions, timeoutSeconds } from "../errors/option_checks.ts";
import {
  NETWORK_CONFIG_KEYS,
  type NetworkConfig,
  NetworkRules,
} from "../../server/egress/rules.ts";
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
  /**
   * Seconds an HTTP call to the provider may take when the call has no `requestTimeout` of its
   * own (default: the `SANDBOX_HTTP_TIMEOUT` environment variable, else the provider's own).
   */
  httpTimeout?: number;
}

const CREDENTIALS = ["apiKey", "apiUrl", "domain", "accessKeyId", "accessKeySecret"] as const;

/** The options `connect` and `killById` know. */
export const CONNECTION_OPTIONS: readonly string[] = ["provider", "httpTimeout", ...CREDENTIALS];

/** The options `create` knows. */
export const CREATE_OPTIONS: readonly string[] = [
  ...CONNECTION_OPTIONS,
  "template",
  "timeout",
  "requestTimeout",
  "metadata",
  "envs",
  "cpu",
  "memory",
  "disk",
  "gpu",
  "secure",
  "policy",
  "commandsFile",
  "isolation",
  "pids",
  "volumes",
  "network",
];

/** The options `list` knows. */
export const LIST_OPTIONS: readonly string[] = [...CONNECTION_OPTIONS, "status", "limit", "offset"];

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
  /**
   * How the `local` provider isolates it: `bwrap` (the default; bubblewrap must be installed)
   * or `none` (Deno permissions only, not a boundary for hostile code: said in `info`, in the
   * capabilities' `warnings` and once on stderr). Other providers refuse it.
   */
  isolation?: "bwrap" | "none";
  /** The most processes at once (`docker`; `local` refuses it). */
  pids?: number;
  /**
   * Named volumes to mount, volume name to absolute path inside (`docker`: they outlive the
   * sandbox; `local` refuses them).
   */
  volumes?: Record<string, string>;
  /**
   * Network access, off by default: `true` for every public host, or rules: `allow` and `deny`
   * lists of `host[:ports]` (`example.com`, `*.example.com`, `10.0.0.0/8`, `*:22`; deny wins;
   * an empty `allow` means every public host) and `hosts`, names resolved without DNS. The
   * sandbox reaches out only through its egress proxy, which audits every connection; change
   * the rules while it runs with `sandbox.network.update(...)`. See `docs/sdk/sandbox.md`.
   */
  network?: boolean | NetworkConfig;
}

/**
 * Check a `network` option: `true` is `{}` (every public host), `false` or undefined no network
 * (undefined); an object's keys are checked with the nearest known name, and every rule is
 * parsed, so a mistake is a `ValidationError` naming it.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { networkOption } from "./options.ts";
 * assert.deepEqual(networkOption(true, "network"), {});
 * assert.equal(networkOption(false, "network"), undefined);
 * assert.throws(() => networkOption({ alow: [] }, "network"), /did you mean 'allow'/);
 * assert.throws(() => networkOption({ allow: ["x.com:http"] }, "network"), /allow\[0\]/);
 * ```
 */
export function networkOption(value: unknown, where: string): NetworkConfig | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ValidationError(`${where} must be true, false or { allow, deny, hosts }`);
  }
  checkOptions(where, value as Record<string, unknown>, NETWORK_CONFIG_KEYS);
  try {
    NetworkRules.compile(value as NetworkConfig, where);
  } catch (e) {
    throw new ValidationError((e as Error).message);
  }
  return structuredClone(value as NetworkConfig);
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

const ISOLATIONS: readonly string[] = ["bwrap", "none"];

/** The longest lifetime, in seconds. */
export const MAX_LIFETIME = 86_400;

function integerIn(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/** A lifetime in seconds (1 to 86400); a larger number is refused as probably milliseconds. */
export function lifetime(value: unknown, name = "timeout"): number {
  if (typeof value === "number" && value > MAX_LIFETIME) timeoutSeconds(name, value);
  return integerIn(name, value, 1, MAX_LIFETIME);
}

/**
 * The HTTP timeout of a provider call in seconds: `requestTimeout`, else `httpTimeout`, else
 * `SANDBOX_HTTP_TIMEOUT`, else undefined (the provider's default).
 */
export function httpTimeout(
  requestTimeout: unknown,
  options: SandboxConnectionOptions,
): number | undefined {
  if (requestTimeout !== undefined) return timeoutSeconds("requestTimeout", requestTimeout);
  if (options.httpTimeout !== undefined) return timeoutSeconds("httpTimeout", options.httpTimeout);
  const env = Deno.env.get("SANDBOX_HTTP_TIMEOUT");
  if (env === undefined || env.trim() === "") return undefined;
  return timeoutSeconds("SANDBOX_HTTP_TIMEOUT", Number(env));
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
 * The provider request of `create`, validated, with the defaults filled in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createRequest } from "./options.ts";
 *
 * assert.equal(createRequest("base", {}).timeout, 300);
 * assert.equal(createRequest("base", { httpTimeout: 90 }).requestTimeout, 90);
 * assert.throws(() => createRequest("base", { timeout: 300_000 }), /looks like milliseconds/);
 * ```
 */
export function createRequest(
  template: string,
  options: SandboxCreateOptions,
): ProviderCreateRequest {
  checkOptions("Sandbox.create", options, CREATE_OPTIONS);
  if (typeof template !== "string" || template === "") {
    throw new ValidationError("template must be a non-empty string");
  }
  for (const [name, value] of Object.entries(stringMap("envs", options.envs))) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || value.includes("\0")) {
      throw new ValidationError(`envs: ${JSON.stringify(name)} is not a valid variable`);
    }
  }
  const requestTimeout = httpTimeout(options.requestTimeout, options);
  if (options.gpu !== undefined && typeof options.gpu !== "string") {
    throw new ValidationError("gpu must be a string");
  }
  if (options.policy !== undefined && typeof options.policy !== "string") {
    if (typeof options.policy !== "object" || options.policy === null) {
      throw new ValidationError("policy must be a policy object or a preset name");
    }
  }
  if (options.isolation !== undefined && !ISOLATIONS.includes(options.isolation)) {
    throw new ValidationError(
      `isolation must be one of ${ISOLATIONS.join(", ")}, got ${JSON.stringify(options.isolation)}`,
    );
  }
  return {
    network: networkOption(options.network, "Sandbox.create: network"),
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
    isolation: options.isolation,
    pids: optionalSize("pids", options.pids),
    volumes: options.volumes === undefined ? undefined : stringMap("volumes", options.volumes),
  };
}

/** The list query, validated, with the contract's defaults. */
export function listQuery(options: SandboxListOptions) {
  checkOptions("Sandbox.list", options, LIST_OPTIONS);
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
