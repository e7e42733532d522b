/**
 * The relay's half of an `open <nonce> <port>` line from the host, the same in both providers'
 * relays (`local/relay.ts`, `docker/relay.ts`): connect to `<port>` inside, then to the host's
 * Unix socket presenting `data <nonce>`, and copy bytes both ways; when either connection cannot
 * be made, tell the host `fail <nonce> <why>`. A line that is not a well-formed `open` is
 * ignored. The host's side is `relay_dials.ts`.
 *
 * `<port>` is `127.0.0.1:<port>`, except the server's own ports where it listens on abstract
 * Unix sockets (`shared/listen_targets.ts`): 9000 and 9001 then go to those sockets, whatever
 * listens on 127.0.0.1:9000 inside.
 *
 * @module
 */

import { splice, writeAll } from "./splice.ts";
import { type ListenTarget, listenTarget } from "../../../shared/listen_targets.ts";

const encoder = new TextEncoder();

async function open(
  socket: string,
  nonce: string,
  port: number,
  say: (l: string) => void,
  target: ListenTarget,
) {
  if (target.transport === "none") return say(`fail ${nonce} ${target.why}`);
  let upstream: Deno.Conn;
  try {
    upstream = target.transport === "unix"
      ? await Deno.connect(target)
      : await Deno.connect(target);
  } catch (e) {
    const why = e instanceof Deno.errors.ConnectionRefused || e instanceof Deno.errors.NotFound
      ? `nothing listens on port ${port}`
      : (e as Error).message.replaceAll("\n", " ");
    return say(`fail ${nonce} ${why}`);
  }
  let data: Deno.UnixConn;
  try {
    data = await Deno.connect({ transport: "unix", path: socket });
    await writeAll(data, encoder.encode(`data ${nonce}\n`));
  } catch (e) {
    upstream.close();
    return say(
      `fail ${nonce} the relay could not reach the host: ${
        (e as Error).message.replaceAll("\n", " ")
      }`,
    );
  }
  await splice(data, upstream, true);
}

/**
 * Act on one line from the host's control connection: an `open <nonce> <port>` opens that
 * connection to where `targetOf` says the port is (in the background), reporting a failure
 * through `say`; anything else is ignored.
 */
export function onHostLine(
  line: string,
  socket: string,
  say: (line: string) => void,
  targetOf: (port: number) => ListenTarget = listenTarget,
): void {
  const [verb, nonce, port] = line.split(" ");
  if (verb === "open" && /^[0-9a-f]{32}$/.test(nonce) && /^\d{1,5}$/.test(port)) {
    open(socket, nonce, Number(port), say, targetOf(Number(port))).catch(() => {});
  }
}
