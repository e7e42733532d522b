/**
 * The policy reference, `docs/server/policy_reference.md`, generated from the policy's zod schema
 * (`server/policy/schema.ts`): every key with its type as the schema states it, and its default
 * and meaning from {@linkcode MEANINGS}. A key the schema gains without a meaning here (or a
 * meaning whose key is gone) stops the generation, so `deno task check` keeps the page current.
 *
 * @module
 */

import { z } from "zod";
import { policySchema } from "../server/policy/schema.ts";

/** A JSON Schema node, as much of it as the walk reads. */
interface Node {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: Node[];
  properties?: Record<string, Node>;
  required?: string[];
  additionalProperties?: Node | boolean;
  items?: Node;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
}

/** One key of the policy: its path (`paths.symlinks`, `identities[].token`) and its type. */
export interface PolicyKey {
  path: string;
  type: string;
  required: boolean;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function scalar(node: Node): string {
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (node.enum) return node.enum.map((v) => `\`${JSON.stringify(v)}\``).join(" | ");
  const bounds: string[] = [];
  if (node.type === "string") {
    if (node.minLength !== undefined && node.minLength > 0) {
      bounds.push(`at least ${node.minLength} characters`);
    }
    if (node.maxLength !== undefined) bounds.push(`at most ${node.maxLength}`);
    if (node.pattern) bounds.push(`matching \`${node.pattern}\``);
    if (node.format) bounds.push(node.format);
  }
  if (node.type === "integer" || node.type === "number") {
    if (node.minimum !== undefined) bounds.push(`≥ ${node.minimum}`);
    if (node.maximum !== undefined && node.maximum < MAX_SAFE) bounds.push(`≤ ${node.maximum}`);
  }
  return bounds.length ? `${node.type} (${bounds.join(", ")})` : node.type ?? "any";
}

/** The type of `node` in words, and the nodes whose keys are listed under it. */
function describe(node: Node, path: string): { type: string; children: [Node, string][] } {
  if (node.anyOf) {
    const parts = node.anyOf.map((alt) => describe(alt, path));
    return {
      type: parts.map((p) => p.type).join(" or "),
      children: parts.flatMap((p) => p.children),
    };
  }
  if (node.type === "object") {
    if (node.properties) return { type: "object", children: [[node, path]] };
    const value = node.additionalProperties;
    if (value && typeof value === "object") {
      const inner = describe(value, `${path}.<key>`);
      const children: [Node, string][] = inner.type === "object" || inner.children.length
        ? [[value, `${path}.<key>`]]
        : [];
      return { type: `map of name to ${inner.type}`, children };
    }
    return { type: "object", children: [] };
  }
  if (node.type === "array" && node.items) {
    const inner = describe(node.items, `${path}[]`);
    const children: [Node, string][] = inner.children.length ? [[node.items, `${path}[]`]] : [];
    return { type: `array of ${inner.type}`, children };
  }
  return { type: scalar(node), children: [] };
}

function walk(node: Node, path: string, out: PolicyKey[]): void {
  if (node.anyOf) {
    for (const alt of node.anyOf) walk(alt, path, out);
    return;
  }
  if (node.type === "array" && node.items) return walk(node.items, path, out);
  if (node.type === "object" && !node.properties) {
    const value = node.additionalProperties;
    if (value && typeof value === "object") walk(value, path, out);
    return;
  }
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const childPath = path ? `${path}.${key}` : key;
    const { type, children } = describe(child, childPath);
    out.push({ path: childPath, type, required: node.required?.includes(key) ?? false });
    for (const [inner, innerPath] of children) walk(inner, innerPath, out);
  }
}

/** Every key of the policy schema, in the schema's order. */
export function policyKeys(): PolicyKey[] {
  const schema = z.toJSONSchema(policySchema, { io: "input", unrepresentable: "any" }) as Node;
  const keys: PolicyKey[] = [];
  walk(schema, "", keys);
  return keys;
}

/** A key's default (as the server applies it when the key is left out) and meaning. */
export interface Meaning {
  default?: string;
  meaning: string;
}

/**
 * The default and meaning of every key of the schema, by the path {@linkcode policyKeys} gives
 * it. Data, checked against the schema both ways on every generation.
 */
export const MEANINGS: Readonly<Record<string, Meaning>> = {
  "preset": {
    default: "`standard`",
    meaning: "A named starting point for which endpoints are on: `standard` everything but the " +
      "opt-in groups (browser, agents); `readonly` no writes, processes or terminals; `minimal` " +
      "core and commands only; `open` everything.",
  },
  "identities": {
    default: "only `default`",
    meaning: "Who may call. `default` (token `SVC_SERVER_TOKEN`, scope `*`) always exists; list " +
      "it to narrow its scopes.",
  },
  "identities[].id": { meaning: "The name in audit lines and `identity_id`." },
  "identities[].token": {
    meaning: "The identity's token, at least 16 characters (the rule `SVC_SERVER_TOKEN` follows).",
  },
  "identities[].token_env": {
    meaning: "Or the environment variable holding the token; unset, the identity cannot call " +
      "(a warning at start says so). The server removes it from every process's environment.",
  },
  "identities[].scopes": {
    meaning: "Scopes granted: `family:action` (`files:read`, `process:run`, …), `files:*` a " +
      "whole family, `*` all.",
  },
  "identities[].network": {
    default: "the policy's `network`",
    meaning: "This identity's network rules, replacing the policy's `network` (`false`: none).",
  },
  "identities[].network.allow": { meaning: "As `network.allow`, for this identity." },
  "identities[].network.deny": { meaning: "As `network.deny`, for this identity." },
  "identities[].network.hosts": { meaning: "As `network.hosts`, for this identity." },
  "endpoints": {
    meaning: "Endpoint id or group name to `true`/`false` or settings; an id wins over its " +
      "group, a group over the group's environment switch and the preset (ids: " +
      "[../endpoints.md](../endpoints.md)).",
  },
  "endpoints.<key>.enabled": { default: "as the preset says", meaning: "On or off." },
  "endpoints.<key>.limits": { meaning: "Limits per identity for this endpoint or group." },
  "endpoints.<key>.limits.rate_per_minute": {
    default: "the table's",
    meaning: "Requests per minute; over it, 429 `rate_limited` with `Retry-After`.",
  },
  "endpoints.<key>.limits.concurrency": {
    default: "the table's",
    meaning: "Requests in flight; over it, 429 `concurrency_limited`.",
  },
  "endpoints.<key>.limits.body_bytes": {
    default: "`limits.body_bytes`",
    meaning: "Largest request body; over it, 413.",
  },
  "endpoints.<key>.scopes": {
    default: "the table's",
    meaning: "Scopes a caller needs, replacing the endpoint table's.",
  },
  "paths": { meaning: "Which paths the file, process and terminal guards let through." },
  "paths.allow": {
    default: "`[<root>]`",
    meaning: "Trees that may be touched; relative entries are under `--root`.",
  },
  "paths.deny": {
    default: "`[]`",
    meaning: "Globs always refused (`path_denied`), over absolute paths: `**` any depth, `*` and " +
      "`?` within one component; a glob not starting with `/` matches at any depth " +
      "(`**/.env`).",
  },
  "paths.read_only": {
    default: "`[]`",
    meaning: "Trees that may be read but never written or deleted (`read_only`).",
  },
  "paths.symlinks": {
    default: "`within`",
    meaning:
      "Symbolic links: `allow` followed like directories, never into the server's own files; " +
      "`within` followed only while " +
      "their real target stays in an allowed, undenied tree (else `symlink_denied`); `deny` " +
      "any link below an allowed tree is refused.",
  },
  "allow_commands": {
    default: "unset (any program)",
    meaning: "When set, the only programs a shell string may run; every simple command is " +
      "checked, wrappers (`env`, `xargs`, `bash -c`) included.",
  },
  "deny_commands": {
    default: "`[]`",
    meaning: "Programs a shell string may never run (`command_not_allowed`).",
  },
  "env": { meaning: "Which environment variables a caller may pass or set." },
  "env.allow": {
    default: "unset (any not denied)",
    meaning: "When set, only these names (globs: `*` any run of characters) " +
      "(`env_var_not_allowed`).",
  },
  "env.deny": {
    default: "`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, `DYLD_*`",
    meaning: "Names (globs) refused (`env_var_denied`); a deny wins over `env.allow`. The " +
      "server's own token variables and `SANDBAR_*` are refused whatever this says.",
  },
  "upload": { meaning: "Which file names an upload may have." },
  "upload.allow_extensions": {
    default: "unset (any)",
    meaning: "When set, only these extensions (`.py` or `py`, any case) " +
      "(`extension_not_allowed`).",
  },
  "upload.deny_extensions": {
    default: "`[]`",
    meaning: "Extensions refused (`extension_not_allowed`).",
  },
  "params": { meaning: "Parameters of handlers." },
  "params.languages": {
    default: "all four",
    meaning: "The languages `run_code` accepts (`language_not_allowed`).",
  },
  "commands": { meaning: "Named command (from `--commands FILE.ts`) to the scopes it needs." },
  "commands.<key>.scopes": {
    meaning: "Scopes that admit the command; a `guarded` command needs a list here or its own.",
  },
  "url_allow": {
    default: "`[]` (any public URL)",
    meaning: "URL patterns the browser may visit, `scheme://host[:port][path]` (`*` for any " +
      "scheme, host or port; `*.example.com`; the path a glob where `*` crosses `/`). Private " +
      "addresses need a pattern that names them.",
  },
  "url_deny": { default: "`[]`", meaning: "URL patterns the browser may never visit." },
  "audit": {
    default: "`deny`",
    meaning: "Audit lines (JSON, stderr or `--audit-log`): `off`, `deny` refusals only, `all`.",
  },
  "network": {
    default: "unset (the host's network)",
    meaning: "Network rules of every process the server starts, through a guarded egress proxy; " +
      "`false` no network at all (see the Network section of [policy.md](policy.md)).",
  },
  "network.allow": {
    default: "`[]` (every public host)",
    meaning: "Rules `host[:ports]`: `*`, a name, `*.example.com`, an address, a CIDR network; " +
      "ports a number, a range `8000-8999` or `*`.",
  },
  "network.deny": { default: "`[]`", meaning: "Rules refused; deny wins." },
  "network.hosts": {
    default: "`{}`",
    meaning: "Names resolved without DNS: name to an address or a list of them.",
  },
  "limits": { meaning: "Global limits." },
  "limits.body_bytes": {
    default: "10485760 (10 MiB)",
    meaning: "Largest request body; 413 over it.",
  },
  "limits.path_max": { default: "4096", meaning: "Longest path in bytes (`invalid_path`)." },
  "agents": { meaning: "The agents group (`/v1/`)." },
  "agents.upstream": {
    default: "`OPENAI_BASE_URL`, else `https://api.openai.com/v1`",
    meaning: "The model provider the sessions call.",
  },
  "agents.upstream.base_url": { meaning: "Its base URL, ending before `/responses`." },
  "agents.upstream.api_key_env": {
    default: "none (no key sent)",
    meaning: "The environment variable holding its key (without `upstream`, `OPENAI_API_KEY`).",
  },
  "agents.upstream.api": {
    default: "`responses`",
    meaning: "Which API the upstream speaks: `responses` or `chat_completions`.",
  },
};

const SELF = "scripts/policy_reference.ts";

/**
 * The generated page.
 *
 * @throws {Error} naming the keys the schema has without a meaning, or meanings without a key.
 */
export function renderPolicyReference(
  meanings: Readonly<Record<string, Meaning>> = MEANINGS,
): string {
  const keys = policyKeys();
  const paths = new Set(keys.map((k) => k.path));
  const missing = keys.filter((k) => !Object.hasOwn(meanings, k.path)).map((k) => k.path);
  const stale = Object.keys(meanings).filter((p) => !paths.has(p));
  if (missing.length || stale.length) {
    throw new Error(
      `${SELF}: MEANINGS is out of step with the policy schema` +
        (missing.length ? `; no meaning for ${missing.join(", ")}` : "") +
        (stale.length ? `; no such key ${stale.join(", ")}` : ""),
    );
  }
  const cell = (text: string) => text.replaceAll("|", "\\|");
  const lines = [
    "# Policy reference",
    "",
    `Generated from the policy schema (\`server/policy/schema.ts\`) by \`${SELF}\`; do not edit`,
    "by hand. Every key of the policy file (JSONC, `--policy`, or the `policy` of",
    "`Sandbox.create`), its type, its default when left out, and what it means. Every key is",
    "optional unless marked required; an unknown key is an error. How the",
    "rules are applied: [policy.md](policy.md); a sample: `examples/policy.jsonc`.",
    "",
    "| key | type | default | meaning |",
    "| --- | --- | --- | --- |",
  ];
  for (const key of keys) {
    const m = meanings[key.path];
    const type = key.type.replaceAll("at least 1 characters", "non-empty");
    const required = key.required ? " **required**" : "";
    lines.push(
      `| \`${key.path}\`${required} | ${cell(type)} | ${m.default ?? ""} | ${m.meaning} |`,
    );
  }
  return lines.join("\n") + "\n";
}
