/**
 * A local sandbox's egress proxy, run by its supervisor on the host: the server's egress proxy
 * (`server/egress/`) on a Unix socket in the sandbox's channel directory, which the sandbox's
 * relay bridges to 127.0.0.1:3128 inside. Its audit lines go to `egress.jsonl` in the sandbox's
 * directory on the host (out of the sandbox's reach) and stay in memory for `network.audit()`.
 *
 * @module
 */

import { EgressProxy } from "../../../server/egress/proxy.ts";
import { type NetworkConfig, NetworkRules } from "../../../server/egress/rules.ts";
import { type AuditEntry, jsonLinesSink } from "../../../server/pipeline/audit.ts";

/** Audit lines kept in memory. */
const KEPT = 1000;

/** One sandbox's proxy and its audit. */
export class SandboxEgress {
  readonly #proxy: EgressProxy;
  readonly #recent: AuditEntry[] = [];
  readonly #file: Deno.FsFile;

  private constructor(socket: string, identity: string, rules: NetworkRules, auditFile: string) {
    this.#file = Deno.openSync(auditFile, { append: true, create: true, mode: 0o600 });
    const sink = jsonLinesSink(this.#file);
    this.#proxy = EgressProxy.listen({ path: socket }, {
      identity,
      rules,
      audit: (entry) => {
        this.#recent.push(entry);
        if (this.#recent.length > KEPT) this.#recent.shift();
        try {
          sink(entry);
        } catch { /* the disk is full: the memory copy stays */ }
      },
    });
  }

  /** Start the proxy of sandbox `id` on `socket`. */
  static start(
    socket: string,
    id: string,
    config: NetworkConfig,
    auditFile: string,
  ): SandboxEgress {
    return new SandboxEgress(socket, id, NetworkRules.compile(config), auditFile);
  }

  /** New rules (`false`: nothing allowed); returns how many open connections were closed. */
  update(config: NetworkConfig | false): number {
    return this.#proxy.update(config === false ? NetworkRules.off() : NetworkRules.compile(config));
  }

  /** The last `limit` audit lines, oldest first. */
  recent(limit: number): AuditEntry[] {
    return this.#recent.slice(-Math.max(0, Math.min(limit, KEPT)));
  }

  /** Stop the proxy. */
  async close(): Promise<void> {
    await this.#proxy.close();
    try {
      this.#file.close();
    } catch { /* closed */ }
  }
}
