/**
 * How the `system` group runs its helper programs (`df`, `grep`, `sh`, `find`, `python3` and the
 * version probes): with a fixed system `PATH` and the C locale, never the environment store's
 * (whose `PATH` a caller may set), on the `system` confinement: they read the system and all of
 * `/proc`, write nothing but their scratch directory and execute only those programs.
 *
 * @module
 */

import type { Spawner } from "../../confine/spawner.ts";
import { confinements } from "../../confine/confinement.ts";
import { environmentStore } from "../../process/environment.ts";
import type { ServerState } from "../../state.ts";

/** The environment and the spawner of the system group's helper programs. */
export interface SystemTools {
  /** A fixed `PATH` and the C locale. */
  env: Record<string, string>;
  /** The `system` confinement's spawner; absent where processes run unconfined. */
  spawner?: Spawner;
}

/** The helper programs' environment and spawner for `state`. */
export function systemTools(state: ServerState): SystemTools {
  return {
    env: environmentStore(state).forServerTool(),
    spawner: confinements(state).system() ?? undefined,
  };
}
