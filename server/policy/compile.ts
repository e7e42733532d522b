/**
 * Turning a {@linkcode PolicyFile} into the decisions the pipeline makes on every request: for
 * each endpoint, on or off and by which rule, its scopes and limits; the identities with their
 * hashed tokens; and the settings the guards read. Done once at start, so a request only looks
 * things up.
 *
 * The endpoint rule, highest first (the first layer with an opinion decides):
 * 1. `code:unimplemented:<group>`: no handler is built for the endpoint yet; nothing turns it on.
 * 2. `policy:endpoints.<id>`, then `policy:endpoints.<group>`: the policy file.
 * 3. `env:SANDBAR_GROUP_<GROUP>:<group>`: an environment switch (`1`/`on`/`true`, `0`/`off`/`false`).
 * 4. `preset:<name>`: the preset.
 * 5. `default:opt-in:<group>`: browser and agents are off unless something above turns them on.
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import { type EndpointLimits, ENDPOINTS, type EndpointSpec } from "../endpoints.ts";
import { parseUrlPatterns } from "../guards/urls/patterns.ts";
import { NetworkRules } from "../egress/rules.ts";
import { tokenTooShort } from "../token.ts";
import type { PolicyEndpointSetting, PolicyFile } from "./schema.ts";
import { type PresetName, presetSays } from "./presets.ts";

/** The decided state of one endpoint. */
export interface EndpointState {
  /** The table row. */
  spec: EndpointSpec;
  /** Whether the endpoint rule lets it run. */
  enabled: boolean;
  /** The layer that decided, when one did; always set when disabled. */
  rule: string | null;
  /** Scopes required (the table's, or the policy's override). */
  scopes: readonly string[];
  /** Limits after the policy's overrides. */
  limits: EndpointLimits;
}

/** A caller the server knows. */
export interface Identity {
  /** Name used in audit entries and the capabilities document. */
  id: string;
  /** The token, compared only by `tokensEqual` of `shared/tokens_equal.ts` (constant time). */
  token: string;
  /** Granted scopes. */
  scopes: readonly string[];
}

/** Path settings, resolved to absolute paths against the server's root. */
export interface PathSettings {
  /** Allowed directory trees. */
  allow: string[];
  /** Glob patterns that are always refused (`path_denied`). */
  deny: string[];
  /** Trees where writes and deletes are refused (`read_only`). */
  readOnly: string[];
  /** What to do with symbolic links. */
  symlinks: "allow" | "within" | "deny";
  /** Longest path accepted. */
  max: number;
  /** Trees refused whatever `allow` says (the server's own files: data and state directories,
   * policy file). */
  refused?: string[];
}

/** The policy as the pipeline and the guards use it. */
export interface CompiledPolicy {
  /** The file as given (empty when there was none). */
  source: PolicyFile;
  /** True when a policy file was given. */
  configured: boolean;
  /** The preset in force. */
  preset: PresetName;
  /** Endpoint states by id. */
  endpoints: ReadonlyMap<string, EndpointState>;
  /** Known identities; `default` is always among them. */
  identities: readonly Identity[];
  /** Path settings. */
  paths: PathSettings;
  /** Programs allowed in shell strings (undefined: any not denied). */
  allowCommands?: readonly string[];
  /** Programs refused in shell strings. */
  denyCommands: readonly string[];
  /** Environment variable rules. */
  env: { allow?: readonly string[]; deny: readonly string[] };
  /** Upload extension rules (lower case, with the dot). */
  upload: { allow?: readonly string[]; deny: readonly string[] };
  /** Languages `run_code` accepts. */
  languages: readonly string[];
  /** Named command to the scopes that admit it. */
  commandScopes: Readonly<Record<string, readonly string[]>>;
  /** URL rules for the browser. */
  urlAllow: readonly string[];
  /** URL rules for the browser. */
  urlDeny: readonly string[];
  /** Audit setting. */
  audit: "off" | "deny" | "all";
  /**
   * Each identity's network rules (its own `network`, else the policy's), or null when the
   * policy has no `network` section anywhere: processes then use the host's network.
   */
  network: ReadonlyMap<string, NetworkRules> | null;
  /** Default body limit in bytes. */
  bodyBytes: number;
  /**
   * Short hash of the policy and the table: changes when either does. Computed (Web Crypto) on
   * first ask, the capabilities document: a synchronous SHA-256 would load a hash library or
   * Node's crypto layer into every server's start.
   */
  revision: () => Promise<string>;
  /** Things an operator should know about this policy. */
  warnings: readonly string[];
}

/** Inputs of {@linkcode compilePolicy} besides the file. */
export interface CompileOptions {
  /** The server's root directory; relative policy paths resolve against it. */
  root: string;
  /** Environment to read switches and `token_env` from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Endpoint ids that have a handler; the rest are `code:unimplemented:<group>`. */
  implemented: ReadonlySet<string>;
  /** The default identity's token. */
  defaultToken: string;
  /** Whether a policy file was given. */
  configured: boolean;
}

/** Environment variable name of a group's switch. */
export function groupSwitchName(group: string): string {
  return `SANDBAR_GROUP_${group.toUpperCase()}`;
}

function parseSwitch(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (["1", "on", "true", "yes"].includes(v)) return true;
  if (["0", "off", "false", "no"].includes(v)) return false;
  return undefined;
}

function settingEnabled(setting: PolicyEndpointSetting | undefined): boolean | undefined {
  if (setting === undefined) return undefined;
  if (typeof setting === "boolean") return setting;
  return setting.enabled;
}

function settingObject(s: PolicyEndpointSetting | undefined) {
  return typeof s === "object" ? s : undefined;
}

function decide(
  spec: EndpointSpec,
  file: PolicyFile,
  options: CompileOptions,
  preset: PresetName,
  warnings: string[],
): { enabled: boolean; rule: string | null } {
  if (!options.implemented.has(spec.id)) {
    return { enabled: false, rule: `code:unimplemented:${spec.group}` };
  }
  const byId = settingEnabled(file.endpoints?.[spec.id]);
  if (byId !== undefined) return { enabled: byId, rule: `policy:endpoints.${spec.id}` };
  const byGroup = settingEnabled(file.endpoints?.[spec.group]);
  if (byGroup !== undefined) return { enabled: byGroup, rule: `policy:endpoints.${spec.group}` };
  const name = groupSwitchName(spec.group);
  const raw = options.env[name];
  const bySwitch = parseSwitch(raw);
  if (raw !== undefined && bySwitch === undefined) {
    const w = `${name}=${JSON.stringify(raw)} is not on/off and was ignored`;
    if (!warnings.includes(w)) warnings.push(w);
  }
  if (bySwitch !== undefined) return { enabled: bySwitch, rule: `env:${name}:${spec.group}` };
  const byPreset = presetSays(preset, spec);
  if (byPreset !== undefined) return { enabled: byPreset, rule: `preset:${preset}` };
  if (spec.optIn) return { enabled: false, rule: `default:opt-in:${spec.group}` };
  return { enabled: true, rule: null };
}

function absolute(root: string, p: string): string {
  return isAbsolute(p) ? resolve(p) : resolve(root, p);
}

/**
 * Compile a policy file into the pipeline's decisions.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { compilePolicy } from "./compile.ts";
 * const policy = compilePolicy({ preset: "readonly" }, {
 *   root: "/workspace", env: {}, implemented: new Set(["shell", "files_list"]),
 *   defaultToken: "0123456789abcdef0123", configured: true,
 * });
 * assert.equal(policy.endpoints.get("shell")?.rule, "preset:readonly");
 * assert.equal(policy.endpoints.get("shell")?.enabled, false);
 * ```
 */
export function compilePolicy(file: PolicyFile, options: CompileOptions): CompiledPolicy {
  const preset: PresetName = file.preset ?? "standard";
  const warnings: string[] = [];
  const endpoints = new Map<string, EndpointState>();
  for (const spec of ENDPOINTS) {
    const { enabled, rule } = decide(spec, file, options, preset, warnings);
    const group = settingObject(file.endpoints?.[spec.group]);
    const own = settingObject(file.endpoints?.[spec.id]);
    endpoints.set(spec.id, {
      spec,
      enabled,
      rule,
      scopes: own?.scopes ?? group?.scopes ?? spec.scopes,
      limits: { ...spec.limits, ...group?.limits, ...own?.limits },
    });
  }

  const identities: Identity[] = [];
  const listed = file.identities ?? [];
  const seen = new Set<string>();
  for (const entry of listed) {
    if (seen.has(entry.id)) throw new Error(`policy: identity "${entry.id}" is listed twice`);
    seen.add(entry.id);
    const token = entry.token ??
      (entry.token_env ? options.env[entry.token_env] : undefined) ??
      (entry.id === "default" ? options.defaultToken : undefined);
    if (!token) {
      warnings.push(`identity "${entry.id}" has no token (token_env unset) and cannot call`);
      continue;
    }
    const source = entry.token !== undefined
      ? `identity "${entry.id}"'s token`
      : entry.token_env
      ? `identity "${entry.id}"'s token (${entry.token_env})`
      : `identity "default"'s token (SVC_SERVER_TOKEN)`;
    const short = tokenTooShort(token, source);
    if (short) throw new Error(`policy: ${short}`);
    identities.push({ id: entry.id, token, scopes: entry.scopes });
  }
  if (!seen.has("default")) {
    const short = tokenTooShort(options.defaultToken, `the default token (SVC_SERVER_TOKEN)`);
    if (short) throw new Error(`policy: ${short}`);
    identities.unshift({
      id: "default",
      token: options.defaultToken,
      scopes: ["*"],
    });
  }

  const root = resolve(options.root);
  const pathsFile = file.paths ?? {};
  const allowCommands = file.allow_commands;
  const revisionOf = JSON.stringify(file) + ENDPOINTS.map((e) => e.id).join(",") +
    String([...options.implemented].length);
  let revisionHash: Promise<string> | undefined;
  const revision = () =>
    revisionHash ??= crypto.subtle.digest("SHA-256", new TextEncoder().encode(revisionOf))
      .then((d) =>
        [...new Uint8Array(d, 0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("")
      );
  if (!options.configured) warnings.push("no policy file: the standard preset applies");
  const network = compileNetwork(file, identities);
  if (!network && options.env.SANDBAR_EGRESS !== "provider") {
    warnings.push(
      "no network section in the policy: processes the server starts use the host's network directly, with no egress rules and no audit",
    );
  }

  return {
    source: file,
    configured: options.configured,
    preset,
    endpoints,
    identities,
    paths: {
      allow: (pathsFile.allow ?? [root]).map((p) => absolute(root, p)),
      deny: pathsFile.deny ?? [],
      readOnly: (pathsFile.read_only ?? []).map((p) => absolute(root, p)),
      symlinks: pathsFile.symlinks ?? "within",
      max: file.limits?.path_max ?? 4096,
    },
    allowCommands,
    denyCommands: file.deny_commands ?? [],
    env: {
      allow: file.env?.allow,
      deny: file.env?.deny ?? ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_*"],
    },
    upload: {
      allow: file.upload?.allow_extensions?.map(normalizeExtension),
      deny: (file.upload?.deny_extensions ?? []).map(normalizeExtension),
    },
    languages: file.params?.languages ?? ["python", "javascript", "typescript", "bash"],
    commandScopes: Object.fromEntries(
      Object.entries(file.commands ?? {}).map(([name, c]) => [name, c.scopes]),
    ),
    // Parsed here only to refuse a bad pattern at start; the URL guard keeps its own parse.
    urlAllow: checkedPatterns(file.url_allow ?? [], "url_allow"),
    urlDeny: checkedPatterns(file.url_deny ?? [], "url_deny"),
    audit: file.audit ?? "deny",
    network,
    bodyBytes: file.limits?.body_bytes ?? 10 * 1024 * 1024,
    revision,
    warnings,
  };
}

/** Each identity's compiled network rules, or null when no `network` is set anywhere. */
function compileNetwork(
  file: PolicyFile,
  identities: readonly Identity[],
): Map<string, NetworkRules> | null {
  const own = new Map((file.identities ?? []).map((i) => [i.id, i.network]));
  if (file.network === undefined && ![...own.values()].some((n) => n !== undefined)) return null;
  const out = new Map<string, NetworkRules>();
  for (const { id } of identities) {
    const setting = own.get(id) ?? file.network;
    const where = own.get(id) !== undefined
      ? `policy: identity "${id}" network`
      : "policy: network";
    if (setting === undefined || setting === false) out.set(id, NetworkRules.off());
    else out.set(id, NetworkRules.compile(setting, where));
  }
  return out;
}

function checkedPatterns(list: string[], key: string): string[] {
  parseUrlPatterns(list, key);
  return list;
}

function normalizeExtension(ext: string): string {
  const e = ext.trim().toLowerCase();
  return e.startsWith(".") ? e : `.${e}`;
}
