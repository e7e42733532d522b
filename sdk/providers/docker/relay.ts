/**
 * The relay inside a docker sandbox: started by the SDK through the engine's exec API, with its
 * stdin and stdout as the control connection (they travel over the engine's socket, which
 * nothing inside the container can reach). For each `open <nonce> <port>` line on stdin it
 * connects to `127.0.0.1:<port>` inside and then to the SDK's Unix socket (in a directory bound
 * read-only into the container, so nothing inside can replace it) with `data <nonce>\n`, and
 * copies bytes both ways; when it cannot, it prints `fail <nonce> <why>`. It prints `ready`
 * first and exits when stdin ends (the SDK's process went away).
 *
 * Ports 9000 and 9001 are the server's: where it listens on abstract sockets, it recorded their
 * names in its state directory (`SANDBAR_LISTEN_TARGETS`, which no process the server starts
 * may write: `shared/listen_targets.ts`), read again at each `open` (the server draws new names
 * when it has to listen again). Deno names no abstract socket in an `--allow-net` list, so the
 * relay's net permission has none.
 *
 * ```sh
 * SANDBAR_LISTEN_TARGETS=/run/sandbar/state/listen_targets.json \
 *   deno run --allow-net --allow-read=SOCKET_DIR,TARGETS --allow-write=SOCKET_DIR \
 *     --allow-env=SANDBAR_LISTEN_TARGETS relay.ts SOCKET
 * ```
 *
 * @module
 */

import { hideFromSameUser } from "../../../server/confine/hardening.ts";
import { onHostLine } from "../local/relay_open.ts";
import {
  LISTEN_TARGETS_ENV,
  type ListenTarget,
  listenTarget,
  parseListenTargets,
} from "../../../shared/listen_targets.ts";

/**
 * Where `port` is, by the server's record in `file`; with no record (not written yet, or read
 * half written) the server's ports go nowhere and the others to 127.0.0.1.
 */
function targetIn(file: string | undefined, port: number): ListenTarget {
  let text = "";
  try {
    if (file) text = Deno.readTextFileSync(file);
  } catch { /* no record yet */ }
  return listenTarget(port, parseListenTargets(text));
}

const encoder = new TextEncoder();

async function main(socket: string): Promise<void> {
  hideFromSameUser();
  const targets = Deno.env.get(LISTEN_TARGETS_ENV);
  const targetOf = (port: number) => targetIn(targets, port);
  let writes = Promise.resolve();
  const say = (line: string) => {
    writes = writes.then(async () => {
      const bytes = encoder.encode(`${line}\n`);
      for (let off = 0; off < bytes.length;) off += await Deno.stdout.write(bytes.subarray(off));
    }).catch(() => {});
  };
  say("ready");
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of Deno.stdin.readable) {
    pending += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, at);
      pending = pending.slice(at + 1);
      onHostLine(line, socket, say, targetOf);
    }
    if (pending.length > 256) break;
  }
}

if (import.meta.main) {
  const [socket] = Deno.args;
  if (!socket) {
    console.error("usage: relay.ts SOCKET_PATH");
    Deno.exit(2);
  }
  await main(socket);
  Deno.exit(0);
}
