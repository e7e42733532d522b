/**
 * The egress proxies of a server run on its own with a `network` section in its policy: one
 * proxy per identity, on a loopback port of its own, started when that identity's first process
 * starts. The identity's processes get that port in their proxy variables, and, where Landlock
 * handles TCP (ABI 4), their confinement refuses `connect` to every other port (see
 * `server/confine/confinement.ts`), so the port says whose connection it is.
 *
 * @module
 */

import type { AuditSink } from "../pipeline/audit.ts";
import { EgressProxy } from "./proxy.ts";

import type { NetworkRules } from "./rules.ts";

export { EGRESS_SERVICE } from "./service_keys.ts";

/**
 * One proxy per identity.
 *
 * @example
 * ```ts ignore
 * const proxies = new IdentityProxies(policy.network!, sink, policy.audit);
 * const env = proxyEnvironment(`127.0.0.1:${proxies.port("ci")}`);
 * ```
 */
export class IdentityProxies {
  readonly #rules: ReadonlyMap<string, NetworkRules>;
  readonly #sink: AuditSink;
  readonly #setting: "off" | "deny" | "all";
  readonly #proxies = new Map<string, EgressProxy>();

  /** Proxies for these rules (by identity), auditing to `sink` by `setting`. */
  constructor(
    rules: ReadonlyMap<string, NetworkRules>,
    sink: AuditSink,
    setting: "off" | "deny" | "all",
  ) {
    this.#rules = rules;
    this.#sink = sink;
    this.#setting = setting;
  }

  /** The rules of `identity` (off for one the policy does not know). */
  rules(identity: string): NetworkRules | undefined {
    return this.#rules.get(identity);
  }

  /** The loopback port of `identity`'s proxy, started on first ask. */
  port(identity: string): number {
    let proxy = this.#proxies.get(identity);
    if (!proxy) {
      const rules = this.#rules.get(identity);
      if (!rules) throw new Error(`no network rules for identity "${identity}"`);
      proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
        identity,
        rules,
        audit: this.#sink,
        auditSetting: this.#setting,
      });
      this.#proxies.set(identity, proxy);
    }
    return proxy.port;
  }

  /** Stop every proxy. */
  async close(): Promise<void> {
    await Promise.all([...this.#proxies.values()].map((p) => p.close()));
    this.#proxies.clear();
  }
}
