/**
 * The control socket of a local sandbox's supervisor: one JSON line in, one JSON line out, over
 * a Unix socket in the sandbox's directory (mode 0700, so only its owner can reach it). Any
 * process of the same user can pause, resume, re-time or kill the sandbox through it.
 *
 * @module
 */

import type { NetworkConfig } from "../../../server/egress/rules.ts";
import type { AuditEntry } from "../../../server/pipeline/audit.ts";
import { readUntil, writeAll } from "./splice.ts";

/** A control request. */
export type ControlRequest =
  | { op: "ping" }
  | { op: "pause" }
  | { op: "resume" }
  | { op: "kill" }
  | { op: "metrics" }
  | { op: "set_timeout"; seconds: number }
  | ClaimRequest
  | { op: "network_update"; network: NetworkConfig | false }
  | { op: "network_audit"; limit: number }
  // The docker provider's egress keeper (`sdk/providers/docker/egress_keeper.ts`): the
  // container was started; wait on it.
  | { op: "watch" };

/**
 * Hand a pooled sandbox to a caller (`pool.ts`): the tokens the caller minted replace the pool's
 * (the server's, the access and the gateway token), `envs` reach its processes, and its
 * lifetime, creation time and metadata become the caller's.
 */
export interface ClaimRequest {
  /** `claim`. */
  op: "claim";
  /** The server's new token. */
  serverToken: string;
  /** The new access token. */
  accessToken: string;
  /** The gateway's new token. */
  gatewayToken: string;
  /** Environment variables of the sandbox's processes. */
  envs: Record<string, string>;
  /** The caller's metadata. */
  metadata: Record<string, string>;
  /** The lifetime from now, in seconds. */
  seconds: number;
}

/** What `metrics` answers: the cgroup's and the disk's counts (see `SandboxMetrics`). */
export interface LocalMetrics {
  /** CPU quota in cores. */
  cpuLimit: number | null;
  /** CPU time used, seconds. */
  cpuSeconds: number | null;
  /** CPU used over the last sample, percent of the quota (of one core without one). */
  cpuPct: number | null;
  /** Memory in use, bytes. */
  memoryBytes: number | null;
  /** Memory limit, bytes. */
  memoryLimitBytes: number | null;
  /** Disk used, bytes. */
  diskBytes: number | null;
  /** Disk size, bytes. */
  diskLimitBytes: number | null;
  /** Processes and threads. */
  pids: number | null;
  /** Their limit. */
  pidsLimit: number | null;
  /** OOM kills so far. */
  oomKills: number;
}

/**
 * A control answer (`network_update` says how many connections it closed, `network_audit`
 * gives the lines).
 */
export type ControlResponse =
  | {
    ok: true;
    status: string;
    endAt: string;
    metrics?: LocalMetrics;
    closed?: number;
    audit?: AuditEntry[];
  }
  | {
    ok: false;
    error: string;
  };

const NEWLINE = new Uint8Array([10]);
const MAX_LINE = 64 * 1024;

/** The supervisor cannot be reached (no socket, refused), or did not answer in time. */
export class ControlUnavailable extends Error {
  /** True when it was there but did not answer in time (it may be busy, or stopped). */
  readonly timedOut: boolean;

  /** Make one. */
  constructor(message: string, timedOut = false) {
    super(message);
    this.timedOut = timedOut;
  }
}

/**
 * Send one request and wait for its answer (at most `timeoutMs`).
 *
 * @example
 * ```ts ignore
 * const answer = await controlCall(dir.controlSocket, { op: "pause" });
 * ```
 */
export async function controlCall(
  path: string,
  request: ControlRequest,
  timeoutMs = 10_000,
): Promise<ControlResponse> {
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path });
  } catch (e) {
    throw new ControlUnavailable((e as Error).message);
  }
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    conn.close();
  }, timeoutMs);
  try {
    await writeAll(conn, new TextEncoder().encode(JSON.stringify(request) + "\n"));
    const line = await readUntil(conn, NEWLINE, MAX_LINE);
    if (!line) {
      if (late) throw new ControlUnavailable(`no answer within ${timeoutMs} ms`, true);
      throw new ControlUnavailable("the supervisor closed the connection");
    }
    return JSON.parse(new TextDecoder().decode(line.head)) as ControlResponse;
  } catch (e) {
    if (late) throw new ControlUnavailable(`no answer within ${timeoutMs} ms`, true);
    if (e instanceof ControlUnavailable) throw e;
    throw new ControlUnavailable((e as Error).message);
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed by the timer */ }
  }
}

/**
 * Serve the control socket: each connection sends one request line and gets one answer line.
 * Returns a function that stops serving.
 */
export function serveControl(
  path: string,
  handler: (request: ControlRequest) => Promise<ControlResponse>,
): () => void {
  const listener = Deno.listen({ transport: "unix", path });
  (async () => {
    for await (const conn of listener) {
      (async () => {
        try {
          const line = await readUntil(conn, NEWLINE, MAX_LINE);
          if (!line) return;
          let answer: ControlResponse;
          try {
            answer = await handler(JSON.parse(new TextDecoder().decode(line.head)));
          } catch (e) {
            answer = { ok: false, error: (e as Error).message };
          }
          await writeAll(conn, new TextEncoder().encode(JSON.stringify(answer) + "\n"));
        } finally {
          try {
            conn.close();
          } catch { /* closed */ }
        }
      })().catch(() => {});
    }
  })().catch(() => {});
  return () => {
    try {
      listener.close();
    } catch { /* closed */ }
  };
}
