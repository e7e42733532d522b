/**
 * `network.access: "disabled"` is enforced by the kernel, not by a promise: every process of
 * such an environment starts in a new, empty network namespace (`unshare --net`, which has
 * only a loopback device that is down), so nothing it runs can open a connection, whatever
 * the program. Where the namespace cannot be made (no `unshare`, no privilege for it and no
 * user namespaces), creating such an environment fails with the reason; it is never accepted
 * and left open.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

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
): Promise<string[]> {
  if (access === "enabled") return [];
  const result = await (probed ??= probe());
  if (typeof result === "string") {
    throw new ApiError(
      "invalid_request",
      `network.access 'disabled' cannot be enforced on this machine: a network namespace could not be made (${result})`,
      { param },
    );
  }
  return result;
}
