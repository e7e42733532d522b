/**
 * Where uploaded files' bytes live in the data directory: the Files API (`resources/files.ts`)
 * writes them, an environment's workspace (`environments/workspace.ts`) copies them in.
 *
 * @module
 */

import { join } from "node:path";
import type { AgentsCore } from "../core.ts";

/** The purposes an upload may have, as the Files API names them. */
export const FILE_PURPOSES = ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"];

/** The directory of uploaded files inside the data directory. */
export function filesDir(core: Pick<AgentsCore, "config">): string {
  return join(core.config.dataDir, "files");
}

/** Where a stored file's bytes are. */
export function fileContentPath(core: Pick<AgentsCore, "config">, id: string): string {
  return join(filesDir(core), id);
}
