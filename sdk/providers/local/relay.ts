/**
 * The relay: the part of a local sandbox that bridges its private network namespace to the
 * host. It runs inside the sandbox's server process, loaded before the server's own modules
 * (`deno run --preload relay.ts … server/main.ts`), so a sandbox has one Deno process inside
 * instead of two (a separate relay cost about 13 MiB and a Deno start per sandbox).
 *
 * It connects out to the supervisor's socket, which is mounted read-only inside (see
 * `channel.ts` for the protocol): it presents its key once on a control connection, then for
 * each `open <nonce> <port>` it connects to `127.0.0.1:<port>` inside and opens a data
 * connection for it (or answers `fail <nonce> <why>`), and copies bytes both ways. Ports 9000
 * and 9001 are the server's: where it listens on abstract sockets it records their names in the
 * module both share (`shared/listen_targets.ts`), and the relay connects there instead; the
 * relay is the only thing outside the processes' Landlock domains that dials them.
 *
 * Where the socket and the key are comes from the environment the launch plan sets, and the
 * variables are removed before the server loads ({@linkcode CHANNEL_ENV}):
 *
 * ```sh
 * SANDBAR_CHANNEL=/run/sandbar-channel/relay.sock SANDBAR_CHANNEL_KEY=/run/sandbar/relay_key \
 *   deno run --preload …/relay.ts … server/main.ts --no-narrow …
 * ```
 *
 * With `SANDBAR_CHANNEL_EGRESS`, the egress proxy's socket (also in the read-only channel
 * directory), it is the egress bridge too: a TCP listener on 127.0.0.1:3128 inside the sandbox's
 * network namespace, the address of its proxy variables, whose every connection it forwards to
 * that socket. It is the only way out; the namespace has no route. The bridge's code is loaded
 * only then, so that the servers of sandboxes without a network section start without it.
 *
 * Before anything of the server loads, it marks the process non-dumpable (every request from the
 * host passes through here with its credentials), reads and removes its key file, and connects.
 * When the control connection ends (the host went away), it ends the server with SIGTERM: without
 * the channel the sandbox is unreachable; unless `SANDBAR_CHANNEL_KEEP=1` (the docker provider's
 * creating process: its sandbox outlives it). Imported without those variables it does nothing.
 *
 * @module
 */

import { hideFromSameUser } from "../../../server/confine/hardening.ts";
import { writeAll } from "./splice.ts";
import { onHostLine } from "./relay_open.ts";
import { CHANNEL_ENV } from "./channel_env.ts";

const encoder = new TextEncoder();

/**
 * Connect to the host and present the key. The control connection and the egress bridge's
 * listener are unreferenced: Deno runs a preload's event loop to its end before the main module,
 * so nothing the relay waits on may hold it (the server keeps the process alive).
 */
async function connect(socket: string, key: string, egressSocket?: string): Promise<Deno.UnixConn> {
  const control = await Deno.connect({ transport: "unix", path: socket });
  await writeAll(control, encoder.encode(`control ${key}\n`));
  control.unref();
  if (egressSocket) {
    // Loaded only by a sandbox with a network section: the others' servers start without it
    // (`deno run --preload` of this file: 27 -> 21 ms measured). Still before the server loads.
    const { bridge, BRIDGE_PORT } = await import("../../../server/egress/bridge.ts");
    const listener = Deno.listen({ hostname: "127.0.0.1", port: BRIDGE_PORT });
    listener.unref();
    bridge(listener, egressSocket).catch(() => {});
  }
  return control;
}

/** Serve the host's `open` lines until the control connection ends. */
async function serve(control: Deno.UnixConn, socket: string): Promise<void> {
  let writes = Promise.resolve();
  const say = (line: string) => {
    writes = writes.then(() => writeAll(control, encoder.encode(`${line}\n`))).catch(() => {});
  };
  for await (const line of lines(control)) onHostLine(line, socket, say);
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

const socket = Deno.env.get(CHANNEL_ENV.socket);
if (socket) {
  const keyFile = Deno.env.get(CHANNEL_ENV.key) ?? "";
  const egress = Deno.env.get(CHANNEL_ENV.egress);
  const keep = Deno.env.get(CHANNEL_ENV.keep) === "1";
  for (const name of Object.values(CHANNEL_ENV)) Deno.env.delete(name);
  // Like the server (which does it again), closed to same-user processes from the start: no
  // ptrace, no /proc/<pid>/mem, environ or descriptors.
  hideFromSameUser();
  // Synchronously, before the server loads: the key is spent before anything else runs.
  const key = Deno.readTextFileSync(keyFile).trim();
  Deno.removeSync(keyFile);
  // The channel is in before the server loads; when it ends, so does the server.
  const control = await connect(socket, key, egress);
  serve(control, socket).catch(() => {}).finally(() => keep || Deno.kill(Deno.pid, "SIGTERM"));
}
