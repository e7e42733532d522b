/**
 * The relay: the one process of a local sandbox that bridges its private network namespace to
 * the host. It connects out to the supervisor's socket, which is mounted read-only inside (see
 * `channel.ts` for the protocol): it presents its key once on a control connection, then for
 * each `open <nonce> <port>` it connects to `127.0.0.1:<port>` inside and opens a data
 * connection for it (or answers `fail <nonce> <why>`), and copies bytes both ways.
 *
 * ```sh
 * deno run --allow-net=127.0.0.1 --allow-read=… --allow-write=… \
 *   relay.ts /run/sandbar-channel/relay.sock /run/sandbar/relay_key
 * ```
 *
 * With a third argument, the egress proxy's socket (also in the read-only channel directory), it
 * is the egress bridge too: a TCP listener on 127.0.0.1:3128 inside the sandbox's network
 * namespace, the address of its proxy variables, whose every connection it forwards to that
 * socket. It is the only way out; the namespace has no route.
 *
 * It marks itself non-dumpable, reads and removes its key file first, prints `{"event":"relay_ready"}` on stdout once the
 * control connection is in, and exits when that connection ends (the host went away).
 *
 * @module
 */

import { hideFromSameUser } from "../../../server/confine/hardening.ts";
import { writeAll } from "./splice.ts";
import { onHostLine } from "./relay_open.ts";
import { EGRESS_BRIDGE_PORT } from "./channel.ts";
import { bridge } from "../../../server/egress/bridge.ts";

const encoder = new TextEncoder();

async function main(socket: string, keyFile: string, egressSocket?: string): Promise<void> {
  // Every request from the host passes through here with its credentials: like the server, the
  // relay is closed to same-user processes (no ptrace, no /proc/<pid>/mem or environ).
  hideFromSameUser();
  const key = (await Deno.readTextFile(keyFile)).trim();
  await Deno.remove(keyFile);
  const control = await Deno.connect({ transport: "unix", path: socket });
  let writes = Promise.resolve();
  const say = (line: string) => {
    writes = writes.then(() => writeAll(control, encoder.encode(`${line}\n`))).catch(() => {});
  };
  if (egressSocket) {
    bridge(Deno.listen({ hostname: "127.0.0.1", port: EGRESS_BRIDGE_PORT }), egressSocket)
      .catch(() => {});
  }
  await writeAll(control, encoder.encode(`control ${key}\n`));
  console.log(JSON.stringify({ event: "relay_ready" }));
  for await (const line of lines(control)) {
    onHostLine(line, socket, say);
  }
}

/** The lines of `conn` until it ends (or a line longer than any the host sends). */
async function* lines(conn: Deno.UnixConn): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const buf = new Uint8Array(4096);
  let pending = "";
  while (true) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return;
    pending += decoder.decode(buf.subarray(0, n), { stream: true });
    let at: number;
    while ((at = pending.indexOf("\n")) >= 0) {
      yield pending.slice(0, at);
      pending = pending.slice(at + 1);
    }
    if (pending.length > 256) return;
  }
}

if (import.meta.main) {
  const [socket, keyFile, egressSocket] = Deno.args;
  if (!socket || !keyFile) {
    console.error("usage: relay.ts SOCKET_PATH KEY_FILE");
    Deno.exit(2);
  }
  await main(socket, keyFile, egressSocket);
  Deno.exit(0);
}
