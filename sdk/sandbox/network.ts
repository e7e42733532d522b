/**
 * The `network` module: the addresses of the sandbox's ports. Local computation only, no
 * request. Associated with the `ports` capability.
 *
 * A port opened inside the sandbox is reached at `getUrl(port)`, `{scheme}://{port}-{id}.{domain}`.
 * Under the local provider the domain is `localhost:<gateway port>`, so the URL is
 * `http://3000-<id>.localhost:<gateway>`: browsers and curl resolve `*.localhost` to loopback.
 * Deno's `fetch` does not; there, use `http://127.0.0.1:<gateway>/_port/3000/…` (see
 * `docs/sdk/sandbox.md`). In secure mode (the default) every request must carry the headers
 * of `getAccessHeaders()`.
 *
 * And the way out: a sandbox created with `network` reaches out only through its egress proxy.
 * `update(...)` changes its rules while it runs (through the provider, not the in-sandbox
 * server), and `audit()` reads what the proxy decided.
 *
 * @module
 */

import { ProviderFeatureNotSupportedError, ValidationError } from "../errors/mod.ts";
import { checkOptions } from "../errors/option_checks.ts";
import type { NetworkConfig } from "../../server/egress/rules.ts";
import type { AuditEntry } from "../../server/pipeline/audit.ts";
import { networkOption } from "./options.ts";

/** What the network module reads from its sandbox. */
export interface NetworkSource {
  /** The sandbox id. */
  readonly sandboxId: string;
  /** The domain of its hosts. */
  readonly domain: string;
  /** `http` or `https`. */
  readonly scheme: string;
  /** Whether port access needs the access token. */
  readonly secure: boolean;
  /** The access token, or null. */
  readonly accessToken: string | null;
  /** The provider's rule change, when it has one. */
  readonly updateNetwork?: (network: NetworkConfig | false) => Promise<number>;
  /** The provider's audit read, when it has one. */
  readonly networkAudit?: (limit: number) => Promise<AuditEntry[]>;
  /** The provider's name (for errors). */
  readonly provider: string;
}

/** The `network` module of a sandbox. */
export class NetworkModule {
  readonly #source: () => NetworkSource;

  /** Made by `Sandbox`. */
  constructor(source: () => NetworkSource) {
    this.#source = source;
  }

  /**
   * `{port}-{sandboxId}.{domain}`.
   */
  getHost(port: number): string {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ValidationError(`port must be an integer from 1 to 65535, got ${port}`);
    }
    const s = this.#source();
    return `${port}-${s.sandboxId}.${s.domain}`;
  }

  /** `{scheme}://{port}-{sandboxId}.{domain}`. */
  getUrl(port: number): string {
    return `${this.#source().scheme}://${this.getHost(port)}`;
  }

  /** In secure mode `{ "X-Access-Token": … }` for the sandbox's gateway; else `{}`. */
  getAccessHeaders(): Record<string, string> {
    const s = this.#source();
    return s.secure && s.accessToken ? { "X-Access-Token": s.accessToken } : {};
  }

  /**
   * Put new network rules in force while the sandbox runs: `true` (every public host), `false`
   * (nothing), or `{ allow, deny, hosts }` as `Sandbox.create({ network })` takes them. New
   * connections use them at once; open connections they refuse are closed. Only for a sandbox
   * created with `network` (create it with `network: { deny: ["*"] }` to open it later).
   *
   * @example
   * ```ts ignore
   * await using sandbox = await Sandbox.create({ network: { allow: ["pypi.org", "*.pythonhosted.org"] } });
   * const { closed } = await sandbox.network.update({ allow: ["pypi.org"] });
   * ```
   */
  async update(network: boolean | NetworkConfig): Promise<{ closed: number }> {
    const s = this.#source();
    if (!s.updateNetwork) {
      throw new ProviderFeatureNotSupportedError(
        `The ${s.provider} provider cannot change network rules`,
      );
    }
    const config = network === false ? false : networkOption(network, "network.update") ?? false;
    if (config && (config.secrets || config.ca)) {
      throw new ValidationError(
        "network.update: secrets and ca are fixed when the sandbox is created; leave them out",
      );
    }
    return { closed: await s.updateNetwork(config) };
  }

  /**
   * What the egress proxy decided, newest last: one entry per connection (`decision`, `host`,
   * `port`, `rule`, `code`), at most `limit` (default 100, at most 1000).
   */
  async audit(options: { limit?: number } = {}): Promise<AuditEntry[]> {
    checkOptions("network.audit", options, ["limit"]);
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new ValidationError(`network.audit: limit must be an integer from 1 to 1000`);
    }
    const s = this.#source();
    if (!s.networkAudit) {
      throw new ProviderFeatureNotSupportedError(
        `The ${s.provider} provider keeps no egress audit`,
      );
    }
    return await s.networkAudit(limit);
  }
}
