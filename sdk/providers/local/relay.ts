/**
 * The relay: the one process of a local sandbox that bridges its private network namespace to
 * the host. It listens on a Unix socket in the sandbox's run directory (the host's supervisor
 * connects to it from outside the namespace) and, for each connection, reads one line naming a
 * port, connects to `127.0.0.1:<port>` inside the sandbox, answers `ok` (or `error <why>`) and
 * then copies bytes both ways.
 *
 * ```sh
 * deno run --allow-net=127.0.0.1 --allow-read=/run/sandbar --allow-write=/run/sandbar \
 *   relay.ts /run/sandbar/relay.sock
 * ```
 *
 * Prints `{"event":"relay_ready"}` on stdout once it listens.
 *
 * @module
 */

import { readUntil, splice, writeAll } from "./splice.ts";

const NEWLINE = new Uint8Array([10]);
const encoder = new TextEncoder();

async function handle(conn: Deno.UnixConn): Promise<void> {
  const line = await readUntil(conn, NEWLINE, 16).catch(() => null);
  const port = line ? Number(new TextDecoder().decode(line.head)) : NaN;
  if (!line || !Number.isInteger(port) || port < 1 || port > 65535) {
    await writeAll(conn, encoder.encode("error bad port line\n")).catch(() => {});
    conn.close();
    return;
  }
  let upstream: Deno.TcpConn;
  try {
    upstream = await Deno.connect({ hostname: "127.0.0.1", port });
  } catch (e) {
    const why = e instanceof Deno.errors.ConnectionRefused
      ? `nothing listens on port ${port}`
      : (e as Error).message.replaceAll("\n", " ");
    await writeAll(conn, encoder.encode(`error ${why}\n`)).catch(() => {});
    conn.close();
    return;
  }
  await writeAll(conn, encoder.encode("ok\n"));
  // The client sent nothing after its port line yet (it waits for "ok"), so `line.rest` is empty.
  await splice(conn, upstream, true);
}

async function main(path: string): Promise<void> {
  await Deno.remove(path).catch(() => {});
  const listener = Deno.listen({ transport: "unix", path });
  console.log(JSON.stringify({ event: "relay_ready" }));
  for await (const conn of listener) {
    handle(conn).catch(() => {
      try {
        conn.close();
      } catch { /* closed */ }
    });
  }
}

if (import.meta.main) {
  const path = Deno.args[0];
  if (!path) {
    console.error("usage: relay.ts SOCKET_PATH");
    Deno.exit(2);
  }
  await main(path);
}
