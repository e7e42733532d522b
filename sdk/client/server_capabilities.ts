/**
 * {@linkcode ServerCapabilities}: the server's capabilities document (`GET /capabilities`) for
 * one identity, with the questions a client asks of it.
 *
 * @module
 */

import {
  CapabilityNotSupportedError,
  EndpointNotAvailableError,
  PolicyDeniedError,
} from "../errors/mod.ts";
import type {
  DenialReason,
  EndpointInfo,
  EndpointLimits,
  EndpointPaths,
  GroupSummary,
  PathDecision,
  PathOperation,
} from "../models/core.ts";

/** The capabilities document as the server sends it (snake_case). */
export interface CapabilitiesDocumentWire {
  /** API version (`"1"`). */
  api_version: string;
  /** Server version. */
  server_version: string;
  /** Hash of the compiled policy; changes when the policy does. */
  revision: string;
  /** The calling identity. */
  identity_id: string;
  /** Its scopes. */
  scopes: string[];
  /** The preset the policy starts from. */
  preset: string;
  /** Whether a policy file was given. */
  configured: boolean;
  /** Policy warnings. */
  warnings: string[];
  /** Every endpoint by id. */
  endpoints: Record<string, Record<string, unknown>>;
  /** Group → whether any endpoint of it is on. */
  groups: Record<string, boolean>;
  /** Group → counts. */
  group_summary: Record<string, GroupSummary>;
}

/** Asks the server for a path decision; supplied by the client that discovered. */
export type PathChecker = (
  endpoint: string,
  path?: string,
  op?: PathOperation,
) => Promise<PathDecision>;

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function camelKeys(obj: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof obj !== "object" || obj === null) return out;
  for (const [k, v] of Object.entries(obj)) out[camel(k)] = v;
  return out;
}

function scopeCovers(granted: readonly string[], scope: string): boolean {
  if (granted.includes("*") || granted.includes(scope)) return true;
  const colon = scope.indexOf(":");
  return colon > 0 && granted.includes(`${scope.slice(0, colon)}:*`);
}

function toInfo(id: string, raw: Record<string, unknown>): EndpointInfo {
  const paths = raw.paths as Record<string, unknown> | undefined;
  return {
    id,
    method: String(raw.method),
    path: String(raw.path),
    group: String(raw.group),
    port: raw.port === "pty" ? "pty" : "http",
    enabled: raw.enabled === true,
    allowed: raw.allowed === true,
    reason: (raw.reason as DenialReason | null | undefined) ?? null,
    rule: (raw.rule as string | null | undefined) ?? null,
    scopes: [...((raw.scopes as string[] | undefined) ?? [])],
    limits: camelKeys(raw.limits) as EndpointLimits,
    paths: paths
      ? {
        allow: [...(paths.allow as string[])],
        readOnly: [...(paths.read_only as string[])],
        denyCount: Number(paths.deny_count),
        symlinks: paths.symlinks as EndpointPaths["symlinks"],
      }
      : null,
    params: camelKeys(raw.params),
  };
}

/**
 * What one identity may do on one server, from `client.discover()`. Cached on
 * `client.capabilities`, it makes calls fail fast: a call to an endpoint this document says is
 * off or not allowed throws {@linkcode EndpointNotAvailableError} or
 * {@linkcode PolicyDeniedError} without a request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create({ policy: { endpoints: { terminal: false } } });
 * const caps = await sandbox.server.discover();
 * assert.equal(caps.can("shell"), true);
 * assert.equal(caps.denial("pty_create"), "endpoint_disabled");
 * assert.equal(caps.rule("pty_create"), "policy:endpoints.terminal");
 * assert.equal(caps.rule("shell"), null); // enabled: no rule disabled it
 * assert.equal(caps.denial("no_such_endpoint"), "unknown_endpoint");
 * ```
 */
export class ServerCapabilities {
  /** The calling identity's id. */
  readonly identityId: string;
  /** The calling identity's scopes. */
  readonly scopes: readonly string[];
  /** The policy's preset. */
  readonly preset: string;
  /** The policy's revision hash; a new policy gives a new revision. */
  readonly revision: string;
  /** Policy warnings (for example an identity without a token). */
  readonly warnings: readonly string[];
  /** The API version of the server (`"1"`). */
  readonly apiVersion: string;
  /** The server's version. */
  readonly serverVersion: string;
  /** Whether the server runs with a policy file (false: the default preset). */
  readonly configured: boolean;
  /** `{group: enabled}`: a group is on when any of its endpoints is. */
  readonly groups: Readonly<Record<string, boolean>>;
  /** `{group: {enabled, total}}`: how many of each group's endpoints are on. */
  readonly groupSummary: Readonly<Record<string, GroupSummary>>;

  readonly #endpoints: ReadonlyMap<string, EndpointInfo>;
  readonly #wire: CapabilitiesDocumentWire;
  readonly #checker: PathChecker | undefined;

  /**
   * Wrap a capabilities document. `checker` serves {@linkcode checkPath}; `client.discover()`
   * passes its own `check`.
   */
  constructor(document: CapabilitiesDocumentWire, checker?: PathChecker) {
    if (typeof document?.endpoints !== "object" || document.endpoints === null) {
      // No legacy mode (contract, Versioning 2): a document without endpoints is unsupported.
      throw new CapabilityNotSupportedError(
        "The server's capabilities document has no endpoints; this server is not supported",
        { suggestion: "Upgrade the in-sandbox server to one that reports its endpoints." },
      );
    }
    this.#wire = document;
    this.#checker = checker;
    this.identityId = document.identity_id;
    this.scopes = Object.freeze([...(document.scopes ?? [])]);
    this.preset = document.preset;
    this.revision = document.revision;
    this.warnings = Object.freeze([...(document.warnings ?? [])]);
    this.apiVersion = document.api_version;
    this.serverVersion = document.server_version;
    this.configured = document.configured === true;
    this.groups = Object.freeze({ ...document.groups });
    this.groupSummary = Object.freeze({ ...document.group_summary });
    this.#endpoints = new Map(
      Object.entries(document.endpoints).map(([id, raw]) => [id, toInfo(id, raw)]),
    );
  }

  /** True when the endpoint exists, is enabled and this identity may call it. */
  can(endpoint: string): boolean {
    return this.#endpoints.get(endpoint)?.allowed === true;
  }

  /** Why the endpoint cannot be called (`endpoint_disabled`, `unknown_endpoint`, `missing_scope`), or null. */
  denial(endpoint: string): DenialReason | null {
    const info = this.#endpoints.get(endpoint);
    if (!info) return "unknown_endpoint";
    if (info.allowed) return null;
    return info.reason ?? (info.enabled ? "missing_scope" : "endpoint_disabled");
  }

  /**
   * The rule code that disabled the endpoint, or null when it is enabled (or unknown). The rule
   * that configured an enabled endpoint, if any, is in `info(endpoint).rule`.
   */
  rule(endpoint: string): string | null {
    const info = this.#endpoints.get(endpoint);
    return info && !info.enabled ? info.rule : null;
  }

  /**
   * The endpoint's {@linkcode EndpointInfo} when it can be called; otherwise throws
   * {@linkcode EndpointNotAvailableError} (off or unknown) or {@linkcode PolicyDeniedError}
   * (a scope is missing), without a request.
   */
  require(endpoint: string): EndpointInfo {
    const info = this.#endpoints.get(endpoint);
    const reason = this.denial(endpoint);
    if (reason === null && info) return info;
    if (reason === "missing_scope" && info) {
      const lacking = info.scopes.find((s) => !scopeCovers(this.scopes, s)) ?? null;
      throw new PolicyDeniedError(
        `Identity ${this.identityId} lacks scope ${lacking ?? info.scopes.join(", ")} for ` +
          `${endpoint} (from cached capabilities; no request was made)`,
        { status: 0, serverCode: "missing_scope", endpoint, scope: lacking },
      );
    }
    throw new EndpointNotAvailableError(
      reason === "unknown_endpoint"
        ? `The server has no endpoint ${endpoint} (from cached capabilities; no request was made)`
        : `Endpoint ${endpoint} is disabled by ${info?.rule ?? "the server"} ` +
          `(from cached capabilities; no request was made)`,
      { status: 0, serverCode: reason ?? "endpoint_disabled", endpoint, rule: info?.rule ?? null },
    );
  }

  /** The endpoint's {@linkcode EndpointInfo}, or null when the server has no such endpoint. */
  info(endpoint: string): EndpointInfo | null {
    return this.#endpoints.get(endpoint) ?? null;
  }

  /**
   * A configured limit of an endpoint (`bodyBytes` / `body_bytes`, `ratePerMinute` /
   * `rate_per_minute`, `concurrency`), or `fallback`.
   */
  limit(endpoint: string, key: string, fallback?: number): number | undefined {
    const limits = this.#endpoints.get(endpoint)?.limits as Record<string, unknown> | undefined;
    const value = limits?.[camel(key)];
    return typeof value === "number" ? value : fallback;
  }

  /**
   * A parameter of an endpoint (for example `param("run_code", "languages")`,
   * `param("shell", "allowCommands")`; snake_case keys work too), or `fallback`.
   */
  param<T = unknown>(endpoint: string, key: string, fallback?: T): T | undefined {
    const params = this.#endpoints.get(endpoint)?.params;
    const value = params?.[camel(key)];
    return value === undefined ? fallback : value as T;
  }

  /** The endpoint's path settings, or null for an endpoint that takes no paths. */
  paths(endpoint: string): EndpointPaths | null {
    return this.#endpoints.get(endpoint)?.paths ?? null;
  }

  /**
   * Endpoint ids a scope grants: those that require at least one scope, all of them covered by
   * `scope` (`files:*` covers `files:read`; `*` covers all). Enabled or not.
   */
  endpointsFor(scope: string): string[] {
    const out: string[] = [];
    for (const [id, info] of this.#endpoints) {
      if (info.scopes.length > 0 && info.scopes.every((s) => scopeCovers([scope], s))) {
        out.push(id);
      }
    }
    return out;
  }

  /** Endpoint ids this identity can call now. */
  available(): string[] {
    return [...this.#endpoints.values()].filter((e) => e.allowed).map((e) => e.id);
  }

  /** Every endpoint id the server reports, on or off. */
  endpoints(): string[] {
    return [...this.#endpoints.keys()];
  }

  /**
   * The server's authoritative decision on a path for an endpoint (`POST /capabilities/check`):
   * lexical, never an existence oracle. `op` defaults to the endpoint's own operation.
   */
  checkPath(endpoint: string, path: string, op?: PathOperation): Promise<PathDecision> {
    if (!this.#checker) {
      return Promise.reject(
        new CapabilityNotSupportedError("These capabilities were not made by a client", {
          suggestion: "Use client.discover() to get capabilities that can check paths.",
        }),
      );
    }
    return this.#checker(endpoint, path, op);
  }

  /** The document as the server sent it. */
  toJSON(): CapabilitiesDocumentWire {
    return this.#wire;
  }
}
