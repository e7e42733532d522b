/**
 * The placeholders of a sandbox's secrets (`network.secrets`): the value a secret's variable
 * holds inside the sandbox, which its egress proxy swaps for the real secret at the secret's
 * host. Shared by the providers that run an egress proxy (local, docker).
 *
 * @module
 */

import { type NetworkConfig, NetworkRules } from "../../server/egress/rules.ts";
import { ValidationError } from "../errors/mod.ts";
import { newSandboxToken } from "./ids.ts";

/**
 * `network` with a fresh placeholder for every secret that has none, checked again with them (a
 * secret so short that the placeholder contains it is refused here, before anything starts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withPlaceholders } from "./secret_placeholders.ts";
 * const secrets = [{ host: "api.test", env: "KEY", value: "a-long-secret-0123" }];
 * const network = withPlaceholders({ secrets });
 * assert.match(network!.secrets![0].placeholder!, /^sandbar-placeholder-/);
 * assert.throws(
 *   () => withPlaceholders({ secrets: [{ host: "api.test", env: "KEY", value: "e" }] }),
 *   /placeholder must be at least 16 characters, not the secret/,
 * );
 * ```
 */
export function withPlaceholders(network: NetworkConfig | undefined): NetworkConfig | undefined {
  if (!network?.secrets) return network;
  const placed = {
    ...network,
    secrets: network.secrets.map((s) => ({
      ...s,
      placeholder: s.placeholder ?? `sandbar-placeholder-${newSandboxToken()}`,
    })),
  };
  try {
    NetworkRules.compile(placed, "network");
  } catch (e) {
    throw new ValidationError((e as Error).message);
  }
  return placed;
}

/**
 * The sandbox's variables with each secret's placeholder added; a secret whose variable is in
 * `envs` already, or `reserved`, is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { placeholderEnvs } from "./secret_placeholders.ts";
 * const network = { secrets: [{ host: "api.test", env: "KEY", value: "s", placeholder: "p" }] };
 * assert.deepEqual(placeholderEnvs({ A: "1" }, network, /^SANDBAR_/), { A: "1", KEY: "p" });
 * assert.throws(() => placeholderEnvs({ KEY: "x" }, network, /^SANDBAR_/), /KEY is set/);
 * ```
 */
export function placeholderEnvs(
  envs: Record<string, string>,
  network: NetworkConfig | undefined,
  reserved: RegExp,
): Record<string, string> {
  const out = { ...envs };
  for (const secret of network?.secrets ?? []) {
    if (secret.env in out || reserved.test(secret.env)) {
      throw new ValidationError(`network.secrets: ${secret.env} is set in envs or reserved`);
    }
    out[secret.env] = secret.placeholder!;
  }
  return out;
}
