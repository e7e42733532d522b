/**
 * The capabilities document (`capabilities`) and the dry-run check (`capabilities_check`).
 *
 * @module
 */

import { confinementWarnings, egressWarnings } from "../../confine/confinement.ts";
import { noexecWarnings } from "../../confine/spawner.ts";
import { processTreeWarnings } from "../../process/trees.ts";
import { z } from "zod";
import { type EndpointGroup, ENDPOINTS_BY_ID, GROUPS } from "../../endpoints.ts";
import { decidePath, type PathOperation } from "../../guards/paths/index.ts";
import type { EndpointState, Identity } from "../../policy/compile.ts";
import { missingScope } from "../../policy/scopes.ts";
import type { ServerState } from "../../state.ts";
import { SERVER_VERSION } from "../../version.ts";
import { capabilityNames } from "../../../shared/capability_names.ts";
import { readBody } from "../../request_reader.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";

/**
 * A local sandbox started with `isolation: "none"` says so in every capabilities document: its
 * launcher sets `SANDBAR_ISOLATION=none` (sdk/providers/local/launch.ts).
 */
function isolationWarnings(): string[] {
  if (Deno.env.get("SANDBAR_ISOLATION") !== "none") return [];
  return [
    'This sandbox runs with isolation "none": no namespaces, its processes are host processes ' +
    "held only by Deno permissions and the server's guards; not a boundary for hostile code",
  ];
}

/** Groups whose endpoints take paths; their capability entries carry the path settings. */
const PATH_GROUPS: ReadonlySet<EndpointGroup> = new Set([
  "file_ops",
  "process",
  "terminal",
  "dev_tools",
]);

const WRITE_IDS: ReadonlySet<string> = new Set([
  "files_mkdir",
  "files_move",
  "files_upload",
  "files_upload_legacy",
]);

/** The operation an endpoint performs on its path, when the caller names none. */
function defaultOperation(id: string): PathOperation {
  if (id === "files_delete") return "delete";
  return WRITE_IDS.has(id) ? "write" : "read";
}

function reasonFor(
  e: EndpointState,
  identity: Identity,
): "endpoint_disabled" | "missing_scope" | null {
  if (!e.enabled) return "endpoint_disabled";
  if (missingScope(identity.scopes, e.scopes)) return "missing_scope";
  return null;
}

function endpointParams(state: ServerState, id: string): Record<string, unknown> | undefined {
  const p = state.policy;
  if (id === "run_code") return { languages: p.languages };
  if (id === "files_upload" || id === "files_upload_legacy") {
    return { allow_extensions: p.upload.allow ?? null, deny_extensions: p.upload.deny };
  }
  if (id === "shell" || id === "shell_stream" || id === "process_start") {
    return { allow_commands: p.allowCommands ?? null, deny_commands: p.denyCommands };
  }
  if (id === "browser_navigate") return { url_allow: p.urlAllow, url_deny: p.urlDeny };
  return undefined;
}

/**
 * The capability names of `identity` (`shared/capability_names.ts`), as its capabilities
 * document gives them: what the listening line says for the default identity, so that a
 * provider need not ask for the whole document before its sandbox is ready.
 */
export function capabilityNamesOf(state: ServerState, identity: Identity): string[] {
  const endpoints: Record<string, { allowed: boolean; group: string }> = {};
  for (const [id, e] of state.policy.endpoints) {
    endpoints[id] = { allowed: reasonFor(e, identity) === null, group: e.spec.group };
  }
  return capabilityNames({ endpoints });
}

/**
 * The capabilities document for one identity.
 */
export async function capabilitiesDocument(state: ServerState, identity: Identity) {
  const policy = state.policy;
  const endpoints: Record<string, unknown> = {};
  const summary: Record<string, { enabled: number; total: number }> = {};
  for (const [id, e] of policy.endpoints) {
    const reason = reasonFor(e, identity);
    const paths = PATH_GROUPS.has(e.spec.group)
      ? {
        allow: policy.paths.allow,
        read_only: policy.paths.readOnly,
        deny_count: policy.paths.deny.length,
        symlinks: policy.paths.symlinks,
      }
      : undefined;
    endpoints[id] = {
      method: e.spec.method,
      path: e.spec.path,
      group: e.spec.group,
      port: e.spec.port === "pty" ? "pty" : "http",
      enabled: e.enabled,
      allowed: reason === null,
      reason,
      rule: e.rule,
      scopes: e.scopes,
      limits: { body_bytes: e.limits.body_bytes ?? policy.bodyBytes, ...e.limits },
      ...(paths ? { paths } : {}),
      ...(endpointParams(state, id) ? { params: endpointParams(state, id) } : {}),
    };
    const s = summary[e.spec.group] ??= { enabled: 0, total: 0 };
    s.total++;
    if (e.enabled) s.enabled++;
  }
  const groups: Record<string, boolean> = {};
  for (const g of GROUPS.keys()) groups[g] = (summary[g]?.enabled ?? 0) > 0;
  return {
    api_version: "1",
    server_version: SERVER_VERSION,
    revision: await policy.revision(),
    identity_id: identity.id,
    scopes: identity.scopes,
    preset: policy.preset,
    configured: policy.configured,
    warnings: [
      ...policy.warnings,
      ...confinementWarnings(),
      ...egressWarnings(policy),
      ...isolationWarnings(),
      ...processTreeWarnings(),
      ...noexecWarnings(),
    ],
    endpoints,
    groups,
    group_summary: summary,
  };
}

/** Body of `capabilities_check`; `path` is decided by the path guard, which reports on it. */
const CheckBody = z.strictObject({
  endpoint: z.string(),
  path: z.unknown().optional(),
  operation: z.enum(["read", "write", "delete"]).optional(),
});

/**
 * `POST /capabilities/check`: would this endpoint (and path, operation) be allowed for the
 * caller? Nothing is run.
 */
export const checkCapability: EndpointHandler = async (c) => {
  const { endpoint, path, operation } = await readBody(c, CheckBody);
  const state = c.get("state");
  const e = state.policy.endpoints.get(endpoint);
  if (!e || !ENDPOINTS_BY_ID.has(endpoint)) {
    return c.json({
      endpoint,
      allowed: false,
      code: "unknown_endpoint",
      reason: `No endpoint ${endpoint}`,
      rule: null,
      path: null,
    });
  }
  const reason = reasonFor(e, c.get("identity"));
  if (reason !== null) {
    const lacking = missingScope(c.get("identity").scopes, e.scopes);
    return c.json({
      endpoint,
      allowed: false,
      code: reason,
      reason: reason === "endpoint_disabled"
        ? `Endpoint ${endpoint} is disabled`
        : `Identity ${c.get("identity").id} lacks scope ${lacking}`,
      rule: reason === "endpoint_disabled" ? e.rule : null,
      path: null,
    });
  }
  if (path === undefined) {
    return c.json({
      endpoint,
      allowed: true,
      code: null,
      reason: "allowed",
      rule: null,
      path: null,
    });
  }
  const op: PathOperation = operation ?? defaultOperation(endpoint);
  const d = decidePath(state.policy.paths, state.root, path, op);
  return c.json({ endpoint, operation: op, rule: null, ...d });
};
