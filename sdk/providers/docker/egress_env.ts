/**
 * The variables of a docker sandbox created with `network`, as a local sandbox's: the proxy's
 * (pointing at the relay's bridge on 127.0.0.1:3128) and, with secrets, those naming the
 * sandbox's CA (bound read-only at `/opt/sandbar/egress-ca`).
 *
 * @module
 */

import type { NetworkConfig } from "../../../server/egress/rules.ts";
import { BRIDGE_PORT, proxyEnvironment } from "../../../server/egress/bridge.ts";
import { EGRESS_CA_INSIDE } from "../local/channel.ts";
import { trustEnvironment } from "../local/launch.ts";

/**
 * `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY` (both cases) and, with secrets,
 * `SSL_CERT_FILE` and the other variables TLS clients read their roots from.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { egressEnvironment } from "./egress_env.ts";
 * assert.equal(egressEnvironment({}).HTTPS_PROXY, "http://127.0.0.1:3128");
 * assert.equal(egressEnvironment({}).SSL_CERT_FILE, undefined);
 * const secrets = [{ host: "api.test", env: "KEY", value: "s" }];
 * assert.equal(egressEnvironment({ secrets }).SSL_CERT_FILE, "/opt/sandbar/egress-ca/bundle.pem");
 * ```
 */
export function egressEnvironment(network: NetworkConfig): Record<string, string> {
  return {
    ...proxyEnvironment(`127.0.0.1:${BRIDGE_PORT}`),
    ...(network.secrets?.length ? trustEnvironment(EGRESS_CA_INSIDE) : {}),
  };
}
