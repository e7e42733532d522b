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
 * answer may still come back). When either side fails, both are closed.
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
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      await writeAll(to, buf.subarray(0, n));
    }
    await to.closeWrite();
  } catch {
    closeQuietly(from);
    closeQuietly(to);
  }
}
