/**
 * `GET /system/env` and `POST /system/env`: the environment store new processes get.
 *
 * @module
 */

import { z } from "zod";
import { ApiError } from "../../errors.ts";
import {
  environmentBytes,
  envRules,
  guardEnv,
  MAX_ENV_TOTAL_BYTES,
} from "../../guards/env/index.ts";
import { environmentStore } from "../../process/environment.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { readBody } from "../../request_reader.ts";

const SetEnvBody = z.strictObject({ env: z.unknown().optional() });

/** `GET /system/env`. */
export const getEnv: EndpointHandler = (c) =>
  c.json({ env: environmentStore(c.var.state).snapshot() });

/** `POST /system/env`. */
export const setEnv: EndpointHandler = async (c) => {
  const body = await readBody(c, SetEnvBody);
  if (body.env === undefined) {
    throw new ApiError("env_invalid", "env is required", { param: "env" });
  }
  const changes = guardEnv(envRules(c.var.state.policy), body.env, { allowNull: true });
  const store = environmentStore(c.var.state);
  const after = { ...store.snapshot(), ...changes };
  const total = environmentBytes(after);
  if (total > MAX_ENV_TOTAL_BYTES) {
    // Every later process start would fail with E2BIG.
    throw new ApiError(
      "env_invalid",
      `The environment would take ${total} bytes; at most ${MAX_ENV_TOTAL_BYTES} are allowed`,
      { param: "env" },
    );
  }
  store.apply(changes);
  return c.json({ env: store.snapshot() });
};
