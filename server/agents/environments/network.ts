/**
 * `network.access: "disabled"` is enforced by the kernel, not by a promise: every process of
 * such an environment starts in a new, empty network namespace (`unshare --net`, which has
 * only a loopback device that is down), so nothing it runs can open a connection, whatever
 * the program. Where the namespace cannot be made (no `unshare`, no privilege for it and no
 * user namespaces), creating such an environment fails with the reason; it is never accepted
 * and left open.
 *
 * `network.access: "restricted"` is the same namespace with one way out: the command runs under
 * `server/egress/netns_bridge.ts`, which brings loopback up and bridges 127.0.0.1:3128 to an
 * egress proxy of the server's on a Unix socket, whose rules are the environment's
 * `allowed_domains` (an empty list allows nothing) and `blocked_domains`, audited under the
 * owner's name. The proxy variables point at the bridge; a program that ignores them reaches
 * nothing.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { ApiError } from "../../errors.ts";
import { jsonLinesSink } from "../../pipeline/audit.ts";
import type { ServerState } from "../../state.ts";
import { SOCKET_EGRESS_SERVICE, SocketProxies } from "../../egress/socket_proxies.ts";

/** What a restricted environment's commands may reach. */
export interface RestrictedNetwork {
  /** The server. */
  state: ServerState;
  /** Whose environment (audit lines name it). */
  owner: string;
  /** `allowed_domains`: network rules (`example.com`, `*.example.com`, `host:443`). */
  allowed: readonly string[];
  /** `blocked_domains`. */
  blocked: readonly string[];
}

const BRIDGE = new URL("../../egress/netns_bridge.ts", import.meta.url);

/** The command line that runs the bridge to `socket` before the command. */
function bridgeArgv(socket: string): string[] {
  const module = BRIDGE.protocol === "file:" ? fileURLToPath(BRIDGE) : BRIDGE.href;
  return [
    Deno.execPath(),
    "run",
    "--no-config",
    "--no-lock",
    "--no-prompt",
    `--allow-net=127.0.0.1,unix:${socket}`,
    `--allow-read=${socket}`,
    `--allow-write=${socket}`,
    "--allow-run",
    "--allow-env",
    ...(BRIDGE.protocol === "file:" ? [] : [`--allow-import=${BRIDGE.host}`]),
    module,
    socket,
    "--",
  ];
}

/** The argv prefixes tried, in order: as root, then inside a user namespace. */
const CANDIDATES: readonly string[][] = [
  ["unshare", "--net", "--"],
  ["unshare", "--net", "--map-root-user", "--"],
];

let probed: Promise<string[] | string> | undefined;

async function probe(): Promise<string[] | string> {
  let last = "unshare was not found";
  for (const prefix of CANDIDATES) {
    try {
      const out = await new Deno.Command(prefix[0], {
        args: [...prefix.slice(1), "true"],
        stdin: "null",
        stdout: "null",
        stderr: "piped",
        clearEnv: true,
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      }).output();
      if (out.success) return prefix;
      last = new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`;
    } catch (e) {
      last = (e as Error).message;
    }
  }
  return last;
}

/**
 * The argv prefix that runs a command without a network, or a refusal naming the reason.
 *
 * @example
 * ```ts ignore
 * const prefix = await networkPrefix("disabled"); // ["unshare", "--net", "--"]
 * ```
 */
export async function networkPrefix(
  access: "enabled" | "disabled" | "restricted",
  param = "environment.network.access",
  restricted?: RestrictedNetwork,
): Promise<string[]> {
  if (access === "enabled") return [];
  let socket: string | undefined;
  if (access === "restricted") {
    if (!restricted) {
      throw new ApiError("invalid_request", "restricted network has no rules", { param });
    }
    const { state, owner, allowed, blocked } = restricted;
    const proxies = state.service(
      SOCKET_EGRESS_SERVICE,
      () =>
        new SocketProxies(
          `${state.stateDir}/egress`,
          jsonLinesSink(Deno.stderr),
          state.policy.audit,
        ),
    );
    try {
      // An empty allow list allows nothing here (network rules read it as every public host).
      socket = proxies.socketFor(
        owner,
        { allow: [...allowed], deny: allowed.length > 0 ? [...blocked] : ["*"] },
        "network",
      );
    } catch (e) {
      throw new ApiError("invalid_request", (e as Error).message, {
        param: param.replace(/access$/, "allowed_domains"),
      });
    }
  }
  const result = await (probed ??= probe());
  if (typeof result === "string") {
    throw new ApiError(
      "invalid_request",
      `network.access '${access}' cannot be enforced on this machine: a network namespace could not be made (${result})`,
      { param },
    );
  }
  return socket ? [...result, ...bridgeArgv(socket)] : result;
}
