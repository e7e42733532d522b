/**
 * The egress bridge: inside a network namespace with no way out, a TCP listener on loopback
 * whose every connection is forwarded to the egress proxy's Unix socket (outside, reached
 * through the file system). Both halves of each connection are passed on, half closes included.
 * The local provider's relay runs one (`sdk/providers/local/relay.ts`), and so does
 * `netns_bridge.ts` for the processes of a restricted agents environment.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { closeQuietly, copyThenCloseWrite } from "./conn_copy.ts";

/** The port the bridge listens on inside, where the proxy variables point. */
export const BRIDGE_PORT = 3128;

/** Loopback names processes reach directly (inside their own confinement's limits). */
const NO_PROXY = "localhost,127.0.0.1,::1";

/**
 * The proxy variables of a process whose proxy listens at `url`: upper and lower case, since
 * curl reads only `http_proxy` in lower case and other tools only the upper.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { proxyEnvironment } from "./bridge.ts";
 * const env = proxyEnvironment("127.0.0.1:3128");
 * assert.equal(env.https_proxy, "http://127.0.0.1:3128");
 * assert.equal(env.ALL_PROXY, "socks5h://127.0.0.1:3128");
 * ```
 */
export function proxyEnvironment(hostPort: string): Record<string, string> {
  const http = `http://${hostPort}`;
  const env: Record<string, string> = {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    ALL_PROXY: `socks5h://${hostPort}`,
    NO_PROXY,
  };
  for (const [k, v] of Object.entries(env)) env[k.toLowerCase()] = v;
  return env;
}

/**
 * The files a process needs to run `netns_bridge.ts` from this package on disk (it imports
 * this file and `conn_copy.ts` alone); none when the package was loaded by URL.
 */
export function bridgeFiles(): string[] {
  const here = new URL(import.meta.url);
  if (here.protocol !== "file:") return [];
  return [here, new URL("./netns_bridge.ts", here), new URL("./conn_copy.ts", here)]
    .map((url) => fileURLToPath(url));
}

/**
 * Forward every connection `listener` accepts to the Unix socket at `socketPath`, until the
 * listener closes.
 *
 * @example
 * ```ts ignore
 * await bridge(Deno.listen({ hostname: "127.0.0.1", port: BRIDGE_PORT }), "/run/egress.sock");
 * ```
 */
export async function bridge(listener: Deno.Listener, socketPath: string): Promise<void> {
  for await (const inside of listener) {
    if (inside.remoteAddr.transport === "tcp") (inside as Deno.TcpConn).setNoDelay(true);
    (async () => {
      let outside: Deno.UnixConn;
      try {
        outside = await Deno.connect({ transport: "unix", path: socketPath });
      } catch {
        closeQuietly(inside);
        return;
      }
      await Promise.all([copyThenCloseWrite(inside, outside), copyThenCloseWrite(outside, inside)]);
      closeQuietly(inside);
      closeQuietly(outside);
    })().catch(() => {});
  }
}
