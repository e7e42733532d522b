/**
 * Run one command of a restricted agents environment: inside the fresh network namespace
 * `unshare --net` made (loopback only, and down), bring loopback up, start the egress bridge on
 * 127.0.0.1:3128 to the environment's proxy socket, and run the command with the proxy
 * variables pointing there, its standard streams this process's own. Exits with the command's
 * code (128 + the signal when a signal ended it).
 *
 * ```sh
 * unshare --net --map-root-user -- deno run --allow-net=127.0.0.1 --allow-read=<socket> \
 *   --allow-write=<socket> --allow-run --allow-env netns_bridge.ts <socket> -- <command…>
 * ```
 *
 * @module
 */

// Only bridge.ts: a confined process may read these two files of the package and no more.
import { bridge, BRIDGE_PORT, proxyEnvironment } from "./bridge.ts";

async function main(args: string[]): Promise<number> {
  const [socket, dashes, program, ...rest] = args;
  if (!socket || dashes !== "--" || !program) {
    console.error("usage: netns_bridge.ts SOCKET -- COMMAND [ARGS…]");
    return 2;
  }
  for (const ip of ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]) {
    const up = await new Deno.Command(ip, {
      args: ["link", "set", "lo", "up"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output().catch(() => null);
    if (up?.success) break;
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: BRIDGE_PORT });
  bridge(listener, socket).catch(() => {});
  const child = new Deno.Command(program, {
    args: rest,
    env: proxyEnvironment(`127.0.0.1:${BRIDGE_PORT}`),
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => child.kill(signal));
  }
  const status = await child.status;
  return status.code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
