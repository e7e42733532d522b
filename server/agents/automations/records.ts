/**
 * Automations and their invocations as stored (rows of the store's `objects` table, kinds
 * `automation` and `invocation`, an invocation's parent its automation) and their public
 * forms. A body's keys that start with `_` are the server's own and never answered: the owner
 * (whose policy the deliveries run under), the next firing, the target session for the list's
 * `session_id` filter. The target as sent is sealed beside the body, since an environment's
 * `env`, `setup_commands` and inline file contents may hold secrets; the body keeps the
 * target's resource form, without them.
 *
 * @module
 */

import type { TargetParam } from "../schemas/automations.ts";
import { applyFields, defaultAgentFields } from "../domain/agents.ts";

/** An automation as stored. */
export interface AutomationBody extends Record<string, unknown> {
  /** Its id. */
  id: string;
  /** `periodic` or `once`. */
  type: "periodic" | "once";
  /** `active`, `paused`, or (once only) `completed`. */
  status: "active" | "paused" | "completed";
  /** The cron expression (periodic). */
  expression?: string;
  /** The IANA time zone (periodic). */
  timezone?: string;
  /** Unix seconds of the one firing (once). */
  run_at?: number;
  /** The target's session for `existing_session` targets, else "" (the list filter). */
  _session_id: string;
  /** The server's own. */
  _internal: {
    /** The identity whose policy deliveries run under. */
    owner: string;
    /** The next due firing in milliseconds, or null (paused, completed, or none left). */
    next_at: number | null;
  };
}

/** An invocation as stored and answered. */
export interface InvocationBody extends Record<string, unknown> {
  /** Its id. */
  id: string;
  /** Always `agent.automation.invocation`. */
  object: "agent.automation.invocation";
  /** Its automation. */
  automation_id: string;
  /** Unix seconds. */
  created_at: number;
  /** The firing it is for (Unix seconds), or null for a manual run. */
  scheduled_at: number | null;
  /** The session it delivered to (or created), or null before there is one. */
  session_id: string | null;
  /** Why it was skipped: `pending_delivery` (target busy) or `missed` (server stopped). */
  skip_reason: SkipReason | null;
  /** Manual, or the automation as it was when it fired. */
  source: { type: "manual" } | { type: "automation"; automation: Record<string, unknown> };
  /** `queued`, `completed`, `failed` or `skipped`. */
  status: "queued" | "completed" | "failed" | "skipped";
  /** The delivery failure, or null. */
  error: { code: string; message: string } | null;
}

/**
 * Why a firing was skipped: the target session still had a turn running, or an earlier
 * invocation of the automation was still being delivered (`pending_delivery`); or the firing
 * fell while the server was stopped and a later one ran instead (`missed`).
 */
export type SkipReason = "pending_delivery" | "missed";

/** The public form of a stored body: without the server's own keys. */
export function publicAutomation(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!k.startsWith("_")) out[k] = v;
  return out;
}

const HOSTED_OVERRIDES = [
  "capability_directories",
  "container_size",
  "desktop",
  "files",
  "network",
  "packages",
  "plugins",
  "skills",
] as const;

function environmentResource(raw: Record<string, unknown>): Record<string, unknown> {
  if (raw.type !== "openai_hosted") return { type: raw.type };
  const out: Record<string, unknown> = {
    type: "openai_hosted",
    environment_id: raw.environment_id ?? null,
    environment_template_id: raw.environment_template_id ?? null,
  };
  for (const k of HOSTED_OVERRIDES) out[k] = raw[k] ?? null;
  const files = raw.files as Record<string, unknown>[] | null | undefined;
  if (files) {
    // Inline contents are confidential: their size only, as the API answers.
    out.files = files.map((f) =>
      f.type === "inline"
        ? { type: "inline", path: f.path, size_bytes: decodedSize(String(f.data ?? "")) }
        : { type: "file_id", file_id: f.file_id, path: f.path }
    );
  }
  const network = raw.network as Record<string, unknown> | null | undefined;
  if (network) {
    out.network = { access: network.access, allowed_domains: network.allowed_domains ?? [] };
  }
  const packages = raw.packages as Record<string, string[] | null> | null | undefined;
  if (packages) {
    out.packages = {
      npm: packages.npm ?? [],
      python: packages.python ?? [],
      system: packages.system ?? [],
    };
  }
  return out;
}

function decodedSize(base64: string): number {
  const clean = base64.replace(/\s+/g, "");
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(clean.length / 4) * 3 - padding);
}

/** The saved target as answered: no `env`, setup commands or inline file contents. */
export function targetResource(target: TargetParam): Record<string, unknown> {
  if (target.type === "existing_session") {
    return {
      type: "existing_session",
      session_id: target.session_id,
      instructions: target.instructions,
    };
  }
  let agent: Record<string, unknown> | null = null;
  if (target.agent) {
    agent = defaultAgentFields();
    applyFields(agent, target.agent);
  }
  return {
    type: "new_session",
    agent,
    agent_id: target.agent_id ?? null,
    environment: environmentResource(target.environment),
    input: target.input.map((m) => ({ role: "user", type: "message", content: m.content })),
    metadata: target.metadata ?? {},
    vault_ids: target.vault_ids ?? [],
  };
}
