/**
 * A local sandbox's egress proxy, run by its supervisor on the host: the server's egress proxy
 * (`server/egress/`) on a Unix socket in the sandbox's channel directory, which the sandbox's
 * relay bridges to 127.0.0.1:3128 inside. Its audit lines go to `egress.jsonl` in the sandbox's
 * directory on the host (out of the sandbox's reach) and stay in memory for `network.audit()`.
 *
 * @module
 */

import { EgressProxy } from "../../../server/egress/proxy.ts";
import { EgressCa } from "../../../server/egress/tls_intercept.ts";
import { type NetworkConfig, NetworkRules } from "../../../server/egress/rules.ts";
import { type AuditEntry, jsonLinesSink } from "../../../server/pipeline/audit.ts";

/** Audit lines kept in memory. */
const KEPT = 1000;

/** One sandbox's proxy and its audit. */
export class SandboxEgress {
  readonly #proxy: EgressProxy;
  readonly #recent: AuditEntry[] = [];
  readonly #file: Deno.FsFile;
  readonly #fixed: Pick<NetworkConfig, "secrets" | "ca">;

  private constructor(
    socket: string,
    identity: string,
    config: NetworkConfig,
    auditFile: string,
    ca: EgressCa | undefined,
  ) {
    this.#fixed = { secrets: config.secrets, ca: config.ca };
    const rules = NetworkRules.compile(config);
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
      ca,
    });
  }

  /**
   * Start the proxy of sandbox `id` on `socket`. With secrets, a CA of its own is made first,
   * and its certificate written to `caDir` (`ca.pem`, and `bundle.pem` with the system's roots)
   * for the sandbox to trust; its key never leaves this process.
   */
  static async start(
    socket: string,
    id: string,
    config: NetworkConfig,
    auditFile: string,
    caDir: string,
  ): Promise<SandboxEgress> {
    let ca: EgressCa | undefined;
    if ((config.secrets ?? []).length > 0) {
      ca = await EgressCa.create(`sandbox ${id}`);
      const system = await Deno.readTextFile("/etc/ssl/certs/ca-certificates.crt").catch(() => "");
      await Deno.mkdir(caDir, { recursive: true, mode: 0o755 });
      await Deno.writeTextFile(`${caDir}/ca.pem`, ca.certPem, { mode: 0o644 });
      await Deno.writeTextFile(`${caDir}/bundle.pem`, `${system}\n${ca.certPem}`, { mode: 0o644 });
    }
    return new SandboxEgress(socket, id, config, auditFile, ca);
  }

  /**
   * New rules (`false`: nothing allowed); the secrets and extra roots stay those of the
   * creation. Returns how many open connections were closed.
   */
  update(config: NetworkConfig | false): number {
    if (config === false) return this.#proxy.update(NetworkRules.off());
    return this.#proxy.update(NetworkRules.compile({ ...config, ...this.#fixed }));
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
