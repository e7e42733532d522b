/**
 * The relay inside a docker sandbox: started by the SDK through the engine's exec API, with its
 * stdin and stdout as the control connection (they travel over the engine's socket, which
 * nothing inside the container can reach). For each `open <nonce> <port>` line on stdin it
 * connects to `127.0.0.1:<port>` inside and then to the SDK's Unix socket (in a directory bound
 * read-only into the container, so nothing inside can replace it) with `data <nonce>\n`, and
 * copies bytes both ways; when it cannot, it prints `fail <nonce> <why>`. It prints `ready`
 * first and exits when stdin ends (the SDK's process went away).
 *
 * ```sh
 * deno run --allow-net=127.0.0.1 --allow-read=SOCKET --allow-write=SOCKET relay.ts SOCKET
 * ```
 *
 * @module
 */

import { hideFromSameUser } from "../../../server/confine/hardening.ts";
import { splice, writeAll } from "../local/splice.ts";

const encoder = new TextEncoder();

async function open(socket: string, nonce: string, port: number, say: (l: string) => void) {
  let upstream: Deno.TcpConn;
  try {
    upstream = await Deno.connect({ hostname: "127.0.0.1", port });
  } catch (e) {
    const why = e instanceof Deno.errors.ConnectionRefused
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

async function main(socket: string): Promise<void> {
  hideFromSameUser();
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
      const [verb, nonce, port] = pending.slice(0, at).split(" ");
      pending = pending.slice(at + 1);
      if (verb === "open" && /^[0-9a-f]{32}$/.test(nonce) && /^\d{1,5}$/.test(port)) {
        open(socket, nonce, Number(port), say).catch(() => {});
      }
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
