/**
 * `fetch` for MCP HTTP servers and OAuth token endpoints, through the policy's URL guard the
 * way the browser goes through it: every URL is checked first (`url_deny`, `url_allow`,
 * schemes, the server's own ports, private addresses unless a specific `url_allow` pattern
 * names the host), and every connection then goes through a {@linkcode SocksGuard} on
 * loopback, which resolves the name, checks every address it resolves to, and connects to one
 * of exactly those. So a name that answers public to the check and private to the connect (DNS
 * rebinding) is refused too. Redirects are never followed by `fetch` itself: the MCP SDK
 * follows same-origin ones with another call, which is checked again.
 *
 * @module
 */

import { SocksGuard } from "../../browser/socks_guard.ts";
import { type SelfAddress, UrlGuard, type UrlRefusal } from "../../guards/urls/index.ts";
import { type ServerState, tcpAddresses } from "../../state.ts";

/** A refusal of the URL guard, thrown by {@linkcode GuardedFetch.fetch}. */
export class UrlRefusedError extends Error {
  /** What the guard said. */
  readonly refusal: UrlRefusal;

  /** Wrap a refusal. */
  constructor(refusal: UrlRefusal) {
    super(refusal.message);
    this.name = "UrlRefusedError";
    this.refusal = refusal;
  }
}

/** The server's own listening addresses, which no MCP connection may reach. */
function selfAddresses(state: ServerState): SelfAddress[] {
  return tcpAddresses(state.addresses);
}

/** A guarded `fetch` with its proxy; close it when done. */
export class GuardedFetch {
  readonly #guard: UrlGuard;
  readonly #proxy: SocksGuard;
  readonly #client: Deno.HttpClient;
  #refusal: UrlRefusal | undefined;
  #closed = false;

  private constructor(guard: UrlGuard) {
    this.#guard = guard;
    this.#proxy = SocksGuard.listen(guard, {
      refused: (refusal) => (this.#refusal = refusal),
      unreachable: () => {},
    });
    // socks5h: the name goes to the proxy unresolved, so the proxy decides by it.
    this.#client = Deno.createHttpClient({
      proxy: { transport: "socks5", url: `socks5h://127.0.0.1:${this.#proxy.port}` },
    });
  }

  /** A guarded fetch under the policy of `state`. */
  static open(state: ServerState): GuardedFetch {
    return new GuardedFetch(
      new UrlGuard(state.policy.urlAllow, state.policy.urlDeny, selfAddresses(state)),
    );
  }

  /** The guard's verdict on a URL (`null` when allowed), without fetching. */
  check(url: string): UrlRefusal | null {
    return this.#guard.checkUrl(url, true);
  }

  /** The last connection the proxy refused, if any. */
  get lastRefusal(): UrlRefusal | undefined {
    return this.#refusal;
  }

  /**
   * `fetch` through the guard. Throws {@linkcode UrlRefusedError} for a URL or a connection
   * the guard refuses.
   */
  readonly fetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    if (this.#closed) throw new Error("the MCP connection is closed");
    const url = String(input);
    const refusal = this.check(url);
    if (refusal) throw new UrlRefusedError(refusal);
    this.#refusal = undefined;
    try {
      return await fetch(url, { ...init, redirect: "manual", client: this.#client });
    } catch (e) {
      const refused = this.#refusal;
      if (refused) throw new UrlRefusedError(refused);
      throw e;
    }
  };

  /** Stop the proxy and drop the connections. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#client.close();
    await this.#proxy.close();
  }
}
