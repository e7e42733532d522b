/**
 * `client.system`: the system group (`docs/server/system.md`).
 *
 * @module
 */

import type { ListeningPort, PackageList, SystemInfo, SystemMetrics } from "../models/system.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";
import { camelize } from "./wire.ts";

/** Keys whose values are data keyed by names, left as they are. */
const KEEP: ReadonlySet<string> = new Set(["versions", "managers", "load"]);

/**
 * The system group: info, metrics, env, setEnv, ports, packages.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // a local sandbox, killed at the end of scope
 * const client = sandbox.server; // the typed client of its in-sandbox server
 * const info = await client.system.info();
 * assert.ok(info.cpus.count >= 1);
 * await client.system.setEnv({ API_URL: "http://127.0.0.1:8000" });
 * assert.equal((await client.system.env()).API_URL, "http://127.0.0.1:8000");
 * ```
 */
export class SystemApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  /** OS, architecture, CPUs, memory, disk, user, root, tool versions. */
  async info(options: CallOptions = {}): Promise<SystemInfo> {
    return camelize<SystemInfo>(await this.#t.json("system_info", callRequest(options)), KEEP);
  }

  /** CPU, memory, disk, load and process counts now. */
  async metrics(options: CallOptions = {}): Promise<SystemMetrics> {
    return camelize<SystemMetrics>(
      await this.#t.json("system_metrics", callRequest(options)),
      KEEP,
    );
  }

  /** The environment new processes get (never the server's credentials). */
  async env(options: CallOptions = {}): Promise<Record<string, string>> {
    const body = await this.#t.json<{ env: Record<string, string> }>(
      "system_env",
      callRequest(options),
    );
    return body.env;
  }

  /**
   * Set (a string) or remove (null) variables for every process started afterwards; returns
   * the whole environment.
   */
  async setEnv(
    env: Record<string, string | null>,
    options: CallOptions = {},
  ): Promise<Record<string, string>> {
    const body = await this.#t.json<{ env: Record<string, string> }>("system_set_env", {
      ...callRequest(options),
      json: { env },
    });
    return body.env;
  }

  /** Listening TCP ports, sorted by port. */
  async ports(options: CallOptions = {}): Promise<ListeningPort[]> {
    const body = await this.#t.json<{ ports: unknown[] }>("system_ports", callRequest(options));
    return camelize<ListeningPort[]>(body.ports);
  }

  /** Installed packages (Debian, pip, npm), filtered by `manager` and name `query`. */
  async packages(
    options: CallOptions & { manager?: "deb" | "pip" | "npm"; query?: string; limit?: number } = {},
  ): Promise<PackageList> {
    const raw = await this.#t.json("system_packages", {
      ...callRequest(options),
      query: { manager: options.manager, query: options.query, limit: options.limit },
    });
    return camelize<PackageList>(raw, KEEP);
  }
}
