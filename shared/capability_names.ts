/**
 * The capability names of a sandbox, derived from its server's capabilities document: a
 * capability is present when the endpoint that carries it is allowed for the sandbox's own
 * identity. `code` is the one `Sandbox` enforces at run time (E3004); the others tell what the
 * sandbox offers. The server gives its default identity's in its listening line too
 * (`server/main.ts`), which the local provider reads instead of asking for the document.
 *
 * @module
 */

/** The endpoint that carries each capability. */
export const CAPABILITY_ENDPOINTS: Readonly<Record<string, string>> = {
  shell: "shell",
  files: "files_download",
  code: "run_code",
  terminal: "pty_create",
  commands: "commands_run",
  system: "system_info",
  git: "git_status",
  browser: "browser_navigate",
};

/** The part of a capabilities document read here. */
export interface CapabilitiesDocumentLike {
  /** Endpoint id to its state for the caller. */
  endpoints: Record<string, { allowed: boolean; group: string }>;
}

/**
 * Capability names of a capabilities document, sorted. `agents` is present when any endpoint
 * of the agents group is allowed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capabilityNames } from "./capability_names.ts";
 * assert.deepEqual(capabilityNames({ endpoints: { run_code: { allowed: true, group: "dev_tools" } } }), ["code"]);
 * ```
 */
export function capabilityNames(doc: CapabilitiesDocumentLike): string[] {
  const names = new Set<string>();
  for (const [name, endpoint] of Object.entries(CAPABILITY_ENDPOINTS)) {
    if (doc.endpoints[endpoint]?.allowed) names.add(name);
  }
  for (const e of Object.values(doc.endpoints)) {
    if (e.group === "agents" && e.allowed) names.add("agents");
  }
  return [...names].sort();
}

/**
 * `list` (a listening line's `capabilities`) as sorted capability names, or null when it is
 * anything but a list of names this module can give.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capabilityList } from "./capability_names.ts";
 * assert.deepEqual(capabilityList(["shell", "code"]), ["code", "shell"]);
 * assert.equal(capabilityList(["shell", "root"]), null);
 * assert.equal(capabilityList(undefined), null);
 * ```
 */
export function capabilityList(list: unknown): string[] | null {
  if (!Array.isArray(list)) return null;
  const known = new Set([...Object.keys(CAPABILITY_ENDPOINTS), "agents"]);
  if (!list.every((n) => typeof n === "string" && known.has(n))) return null;
  return [...new Set(list as string[])].sort();
}
