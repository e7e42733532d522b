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
import { LINK_PARAM } from "../providers/local/port_link.ts";
import { signLink } from "../providers/local/port_link_sign.ts";

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

  /**
   * A URL of `port` that opens in a browser, with no header, until `expires` seconds from now
   * (default 3600, at most 30 days): in secure mode it carries a signature of the sandbox id, the
   * port and the expiry keyed by the access token, which the gateway turns into a cookie for that
   * port; past the expiry both stop working. Without secure mode it is `getUrl(port)`. Anyone
   * holding the link reaches that port (and no other) until it expires, so share it as a secret.
   *
   * @example
   * ```ts ignore
   * const url = sandbox.network.getSignedUrl(3000, { expires: 600 }); // open in a browser
   * ```
   */
  getSignedUrl(port: number, options: { expires?: number } = {}): string {
    checkOptions("network.getSignedUrl", options, ["expires"]);
    const expires = options.expires ?? 3600;
    if (!Number.isInteger(expires) || expires < 1 || expires > 30 * 86_400) {
      throw new ValidationError(
        `expires must be whole seconds from 1 to 2592000 (30 days), got ${expires}`,
      );
    }
    const url = this.getUrl(port);
    const s = this.#source();
    if (!s.secure || !s.accessToken) return url;
    if (s.provider !== "local" && s.provider !== "docker") {
      throw new ProviderFeatureNotSupportedError(
        `The ${s.provider} provider's gateway does not take signed links`,
      );
    }
    const expiry = Math.floor(Date.now() / 1000) + expires;
    const value = signLink(s.accessToken, s.sandboxId, port, expiry);
    return `${url}/?${LINK_PARAM}=${value}`;
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
