/**
 * Step 7 of the pipeline, the audit entry: one JSON line per request by the `audit` setting
 * (`off`, `deny`: refusals and failures only, `all`). It runs after everything else, with the
 * final status, and it writes last. Never a token, a body or a query string: only the time, the
 * endpoint id, the identity, the decision, the status and the code.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { EndpointState, Identity } from "../policy/compile.ts";

/** One audit line. */
export interface AuditEntry {
  /** ISO time the request finished its pipeline. */
  time: string;
  /** Endpoint id. */
  endpoint: string;
  /** Identity id, or null when authentication did not pass. */
  identity: string | null;
  /** `allow` for 2xx/3xx, `deny` for a refusal, `error` for a failure. */
  decision: "allow" | "deny" | "error";
  /** HTTP status. */
  status: number;
  /** Machine code of a refusal or failure. */
  code: string | null;
  /** An egress connection (`endpoint` `egress`): the host asked for. */
  host?: string;
  /** An egress connection: the port asked for. */
  port?: number;
  /** An egress connection: the network rule that decided (see `server/egress/rules.ts`). */
  rule?: string;
}

/** Where audit lines go. */
export type AuditSink = (entry: AuditEntry) => void;

/**
 * An audit sink writing JSON lines to an open file (or stderr).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonLinesSink } from "./audit.ts";
 * const lines: string[] = [];
 * const sink = jsonLinesSink({
 *   writeSync: (bytes) => lines.push(new TextDecoder().decode(bytes)) && bytes.length,
 * });
 * const entry = { time: new Date().toISOString(), endpoint: "shell", identity: "ci",
 *   decision: "deny" as const, status: 403, code: "command_not_allowed" };
 * sink(entry);
 * assert.deepEqual(lines, [JSON.stringify(entry) + "\n"]); // one line per entry
 * ```
 */
export function jsonLinesSink(file: { writeSync(p: Uint8Array): number }): AuditSink {
  const encoder = new TextEncoder();
  return (entry) => {
    const bytes = encoder.encode(JSON.stringify(entry) + "\n");
    let off = 0;
    while (off < bytes.length) off += file.writeSync(bytes.subarray(off));
  };
}

/**
 * The audit step: called last with the final status and the error, if any.
 */
export function recordAudit(
  endpoint: EndpointState,
  identity: Identity | undefined,
  setting: "off" | "deny" | "all",
  sink: AuditSink,
  status: number,
  error: unknown,
): void {
  if (setting === "off") return;
  const decision = status >= 500 ? "error" : status >= 400 ? "deny" : "allow";
  if (setting === "deny" && decision === "allow") return;
  sink({
    time: new Date().toISOString(),
    endpoint: endpoint.spec.id,
    identity: identity?.id ?? null,
    decision,
    status,
    code: error instanceof ApiError ? error.code : error ? "internal" : null,
  });
}
