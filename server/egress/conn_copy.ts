/**
 * Moving bytes between two connections, for the egress bridge, the egress proxy's tunnels and
 * its TLS interception: write all of a buffer, copy one direction until it ends and pass the
 * end on as a half close, and close without caring whether the other side already did.
 * One place, so every hop of an egress connection ends the same way.
 *
 * It imports nothing: `bridge.ts` imports it, and a confined process may read only the few
 * files `bridgeFiles()` names.
 *
 * @module
 */

/** A copy's first read buffer: enough for the many connections that carry little. */
const FIRST_READ = 64 * 1024;

/**
 * The largest read buffer a copy grows to. A bulk transfer fills every read, and reading (and
 * writing) 1 MiB at a time instead of 64 KiB cut the proxy's CPU per GiB moved by about a
 * quarter (scripts/bench/network.ts); the cost is at most 1 MiB per busy direction.
 */
const MAX_READ = 1024 * 1024;

/** Close `c`, if any; a connection already closed is fine. */
export function closeQuietly(c: Deno.Conn | undefined): void {
  try {
    c?.close();
  } catch { /* closed */ }
}

/** Write all of `bytes` to `to` (one `write` may take only part). */
export async function writeAll(to: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await to.write(bytes.subarray(off));
}

/**
 * Copy `from` to `to` until `from` ends, then end `to`'s writing side (a half close: the
 * answer may still come back). When either side fails, both are closed. The read buffer starts
 * at 64 KiB and doubles, up to 1 MiB, each time a read fills it: the bytes are not looked at,
 * only moved, so a bulk transfer costs as few reads and writes as the socket allows.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { copyThenCloseWrite } from "./conn_copy.ts";
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const dialed = Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
 * const accepted = await listener.accept();
 * const client = await dialed;
 * await client.write(new TextEncoder().encode("hi"));
 * await client.closeWrite();
 * const echo = copyThenCloseWrite(accepted, accepted);
 * const got = await new Response(client.readable).text();
 * await echo;
 * assert.equal(got, "hi");
 * accepted.close();
 * listener.close();
 * ```
 */
export async function copyThenCloseWrite(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  let buf = new Uint8Array(FIRST_READ);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      await writeAll(to, buf.subarray(0, n));
      if (n === buf.length && buf.length < MAX_READ) buf = new Uint8Array(buf.length * 2);
    }
    await to.closeWrite();
  } catch {
    closeQuietly(from);
    closeQuietly(to);
  }
}
