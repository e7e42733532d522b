/**
 * The policy file's shape, as strict zod schemas: an unknown key anywhere is an error, so the
 * server never runs with a policy it half understood. The types exported here are plain
 * interfaces; the schemas stay internal to the policy module.
 *
 * @module
 */

import { z } from "zod";
import { MIN_TOKEN_LENGTH } from "../token.ts";

const limitsSchema = z.strictObject({
  rate_per_minute: z.number().int().min(1).optional(),
  concurrency: z.number().int().min(1).optional(),
  body_bytes: z.number().int().min(0).optional(),
});

const endpointSettingSchema = z.union([
  z.boolean(),
  z.strictObject({
    enabled: z.boolean().optional(),
    limits: limitsSchema.optional(),
    scopes: z.array(z.string().min(1)).optional(),
  }),
]);

const networkSchema = z.union([
  z.literal(false),
  z.strictObject({
    allow: z.array(z.string().min(1)).optional(),
    deny: z.array(z.string().min(1)).optional(),
    hosts: z.record(z.string(), z.union([z.string(), z.array(z.string())])).optional(),
  }),
]);

const identitySchema = z.strictObject({
  id: z.string().min(1).max(128),
  token: z.string().min(MIN_TOKEN_LENGTH, {
    message: `a token needs at least ${MIN_TOKEN_LENGTH} characters, as SVC_SERVER_TOKEN does`,
  }).optional(),
  token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
  scopes: z.array(z.string().min(1)),
  network: networkSchema.optional(),
});

/** The policy file schema (JSONC). */
export const policySchema = z.strictObject({
  preset: z.enum(["standard", "readonly", "minimal", "open"]).optional(),
  identities: z.array(identitySchema).optional(),
  endpoints: z.record(z.string(), endpointSettingSchema).optional(),
  paths: z.strictObject({
    allow: z.array(z.string().min(1)).optional(),
    deny: z.array(z.string().min(1)).optional(),
    read_only: z.array(z.string().min(1)).optional(),
    symlinks: z.enum(["allow", "within", "deny"]).optional(),
  }).optional(),
  allow_commands: z.array(z.string().min(1)).optional(),
  deny_commands: z.array(z.string().min(1)).optional(),
  env: z.strictObject({
    allow: z.array(z.string().min(1)).optional(),
    deny: z.array(z.string().min(1)).optional(),
  }).optional(),
  upload: z.strictObject({
    allow_extensions: z.array(z.string()).optional(),
    deny_extensions: z.array(z.string()).optional(),
  }).optional(),
  params: z.strictObject({
    languages: z.array(z.enum(["python", "javascript", "typescript", "bash"])).optional(),
  }).optional(),
  commands: z.record(z.string(), z.strictObject({ scopes: z.array(z.string().min(1)) }))
    .optional(),
  url_allow: z.array(z.string().min(1)).optional(),
  url_deny: z.array(z.string().min(1)).optional(),
  audit: z.enum(["off", "deny", "all"]).optional(),
  network: networkSchema.optional(),
  limits: z.strictObject({
    body_bytes: z.number().int().min(0).optional(),
    path_max: z.number().int().min(1).max(65536).optional(),
  }).optional(),
  agents: z.strictObject({
    upstream: z.strictObject({
      base_url: z.url({ protocol: /^https?$/ }),
      api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
      api: z.enum(["responses", "chat_completions"]).optional(),
    }).optional(),
  }).optional(),
});

/** Limits of one endpoint as the policy sets them. */
export interface PolicyLimits {
  /** Requests per minute per identity. */
  rate_per_minute?: number;
  /** Requests in flight per identity. */
  concurrency?: number;
  /** Largest request body in bytes. */
  body_bytes?: number;
}

/** One `endpoints.<id-or-group>` value: on/off, or settings. */
export type PolicyEndpointSetting = boolean | {
  enabled?: boolean;
  limits?: PolicyLimits;
  scopes?: string[];
};

/** One identity of the policy file. */
export interface PolicyIdentity {
  /** Name shown in audit entries and `identity_id`. */
  id: string;
  /** The token, at least 16 characters. */
  token?: string;
  /** Or the environment variable that holds the token. */
  token_env?: string;
  /** Scopes granted; `*` grants all, `files:*` all of one family. */
  scopes: string[];
  /** This identity's network rules, instead of the policy's `network`. */
  network?: PolicyNetwork;
}

/**
 * Network rules of the processes the server starts (see `server/egress/rules.ts`): `false`, no
 * network at all; an object, only through the egress proxy, by its `allow` and `deny` rules
 * (`hosts` resolves names without DNS).
 */
export type PolicyNetwork = false | {
  allow?: string[];
  deny?: string[];
  hosts?: Record<string, string | string[]>;
};

/** The policy file, as parsed. Every key is optional; defaults: `docs/server/policy_reference.md`. */
export interface PolicyFile {
  /** A named starting point: `standard` (default), `readonly`, `minimal`, `open`. */
  preset?: "standard" | "readonly" | "minimal" | "open";
  /** Who may call, with which scopes. */
  identities?: PolicyIdentity[];
  /** Endpoint id or group name to on/off or settings. */
  endpoints?: Record<string, PolicyEndpointSetting>;
  /** Path rules enforced by the file, process and terminal guards. */
  paths?: {
    allow?: string[];
    deny?: string[];
    read_only?: string[];
    symlinks?: "allow" | "within" | "deny";
  };
  /** Programs a shell string may run (every simple command is checked). */
  allow_commands?: string[];
  /** Programs a shell string may never run. */
  deny_commands?: string[];
  /** Environment variables a caller may pass or set. */
  env?: { allow?: string[]; deny?: string[] };
  /** Upload extension rules. */
  upload?: { allow_extensions?: string[]; deny_extensions?: string[] };
  /** Parameters of handlers: the languages `run_code` accepts. */
  params?: { languages?: ("python" | "javascript" | "typescript" | "bash")[] };
  /** Named command name to the scopes that admit it. */
  commands?: Record<string, { scopes: string[] }>;
  /** URL patterns the browser may visit. */
  url_allow?: string[];
  /** URL patterns the browser may never visit. */
  url_deny?: string[];
  /** Audit setting: `off`, `deny` (default) or `all`. */
  audit?: "off" | "deny" | "all";
  /**
   * Network rules of every identity's processes (an identity's own `network` wins); left out,
   * processes use the host's network as it is.
   */
  network?: PolicyNetwork;
  /** Global limits. */
  limits?: { body_bytes?: number; path_max?: number };
  /** The agents group: the upstream model provider (`base_url`, and the variable holding its key). */
  agents?: {
    upstream?: {
      base_url: string;
      api_key_env?: string;
      api?: "responses" | "chat_completions";
    };
  };
}
