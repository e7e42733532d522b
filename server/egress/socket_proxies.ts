/**
 * Egress proxies on Unix sockets, one per identity and set of rules, for processes that run in
 * a network namespace of their own and reach out only through `netns_bridge.ts` (a restricted
 * agents environment). Started on first ask; the socket lives in the server's state directory.
 *
 * @module
 */

import { join } from "node:path";
import type { AuditSink } from "../pipeline/audit.ts";
import { EgressProxy } from "./proxy.ts";
import { type NetworkConfig, NetworkRules } from "./rules.ts";

/** The key of the service in the server's state. */
export const SOCKET_EGRESS_SERVICE = "egress:sockets";

/**
 * The proxies.
 *
 * @example
 * ```ts ignore
 * const socket = proxies.socketFor("ci", { allow: ["pypi.org"] });
 * ```
 */
export class SocketProxies {
  readonly #dir: string;
  readonly #sink: AuditSink;
  readonly #setting: "off" | "deny" | "all";
  readonly #proxies = new Map<string, { proxy: EgressProxy; path: string }>();

  /** Proxies with their sockets in `dir`, auditing to `sink` by `setting`. */
  constructor(dir: string, sink: AuditSink, setting: "off" | "deny" | "all") {
    this.#dir = dir;
    this.#sink = sink;
    this.#setting = setting;
  }

  /** The socket of `identity`'s proxy with these rules (checked: throws naming a bad one). */
  socketFor(identity: string, config: NetworkConfig, where: string): string {
    const rules = NetworkRules.compile(config, where);
    // One proxy per identity and rules; its socket is named by its place in this server's list.
    const key = JSON.stringify([identity, config]);
    let found = this.#proxies.get(key);
    if (!found) {
      Deno.mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
      const path = join(this.#dir, `${this.#proxies.size}.sock`);
      try {
        Deno.removeSync(path);
      } catch { /* none */ }
      const proxy = EgressProxy.listen({ path }, {
        identity,
        rules,
        audit: this.#sink,
        auditSetting: this.#setting,
      });
      found = { proxy, path };
      this.#proxies.set(key, found);
    }
    return found.path;
  }

  /** Stop every proxy. */
  async close(): Promise<void> {
    await Promise.all([...this.#proxies.values()].map((p) => p.proxy.close()));
    this.#proxies.clear();
  }
}
