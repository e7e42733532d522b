/**
 * Name resolution and connecting for the proxies: a name is resolved once, every address it
 * resolves to is judged, and the connection goes to one of exactly those addresses, so DNS
 * rebinding cannot swap the address between the check and the connect.
 *
 * @module
 */

import { parseIp } from "../guards/urls/index.ts";

/**
 * Every address of `host`: the address itself for a literal, the `hosts` entry when there is
 * one, else the system resolver's answer (`/etc/hosts`, then DNS). Throws when the name is not
 * found.
 */
export async function resolveAll(
  host: string,
  hosts: ReadonlyMap<string, readonly string[]> = new Map(),
): Promise<string[]> {
  const bare = host.startsWith("[") ? host.slice(1, -1) : host;
  if (parseIp(bare)) return [bare];
  const fixed = hosts.get(host.toLowerCase().replace(/\.$/, ""));
  if (fixed) return [...fixed];
  // Loaded on the first name to resolve: Node's DNS layer is no part of the server's start.
  const { lookup } = await import("node:dns/promises");
  const found = await lookup(bare, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

/** A TCP connection to the first of `addresses` that answers, or undefined. */
export async function connectAny(
  addresses: readonly string[],
  port: number,
): Promise<Deno.TcpConn | undefined> {
  for (const hostname of addresses) {
    try {
      const conn = await Deno.connect({ hostname, port });
      conn.setNoDelay(true);
      return conn;
    } catch { /* the next address */ }
  }
  return undefined;
}
