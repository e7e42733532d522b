/**
 * Run one command of a restricted agents environment: inside the fresh network namespace
 * `unshare --net` made (loopback only, and down), bring loopback up, start the egress bridge on
 * 127.0.0.1:3128 to the environment's proxy socket, and run the command with the proxy
 * variables pointing there, its standard streams this process's own. Exits with the command's
 * code.
 *
 * ```sh
 * unshare --net --map-root-user -- deno run --allow-net=127.0.0.1 --allow-read=<socket> \
 *   --allow-write=<socket> --allow-run --allow-env netns_bridge.ts <socket> -- <command…>
 * ```
 *
 * @module
 */

// Only bridge.ts (and its conn_copy.ts): a confined process may read these three files of the
// package and no more.
import { bridge, BRIDGE_PORT, proxyEnvironment } from "./bridge.ts";

/**
 * Where `program` may be, in `execvp`'s order: itself when it names a path, else along PATH.
 * Tried one after the other: a confined process may not execute some of the server's PATH (a
 * directory under a home it cannot read), where `Deno.Command` alone would stop at the first.
 */
function candidates(program: string): string[] {
  if (program.includes("/")) return [program];
  const dirs = (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":");
  // Not looked at first (this process may read nothing but its socket): spawning tells.
  return dirs.map((dir) => `${dir || "."}/${program}`);
}

/** Start `program` from the first of its candidates this process may execute. */
function spawn(program: string, args: string[]): Deno.ChildProcess {
  let last: unknown = new Deno.errors.NotFound(`${program}: not found`);
  for (const path of candidates(program)) {
    try {
      return new Deno.Command(path, {
        args,
        env: proxyEnvironment(`127.0.0.1:${BRIDGE_PORT}`),
        stdin: "inherit",
        stdout: "inherit",
        stderr: "inherit",
      }).spawn();
    } catch (e) {
      last = e;
    }
  }
  throw last;
}

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
  let child: Deno.ChildProcess;
  try {
    child = spawn(program, rest);
  } catch (e) {
    console.error(`${program}: ${(e as Error).message}`);
    return 127;
  }
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => child.kill(signal));
  }
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
