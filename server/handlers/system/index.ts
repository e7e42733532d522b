/**
 * The system group: what the machine is (`info`, `metrics`, `ports`, `packages`) and the
 * environment new processes get (`env`, `set_env`). Wire shapes: `docs/server/system.md`.
 *
 * @module
 */

import type { GroupHandlers } from "../../pipeline/handler.ts";
import type { SystemId } from "../../endpoints.ts";
import { getEnv, setEnv } from "./env.ts";
import { info } from "./info.ts";
import { metrics } from "./metrics.ts";
import { packages } from "./packages.ts";
import { ports } from "./ports.ts";

/**
 * The system group's handlers.
 */
export const systemHandlers: GroupHandlers<SystemId> = {
  system_info: info,
  system_metrics: metrics,
  system_env: getEnv,
  system_set_env: setEnv,
  system_ports: ports,
  system_packages: packages,
};
