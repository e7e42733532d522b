/**
 * The core group: `health`, `capabilities` and `capabilities_check`.
 *
 * @module
 */

import type { CoreId } from "../../endpoints.ts";
import type { GroupHandlers } from "../../pipeline/handler.ts";
import { capabilitiesDocument, checkCapability } from "./capabilities.ts";

/** The core group's handlers. */
export const coreHandlers: GroupHandlers<CoreId> = {
  health: (c) => c.json({ status: "ok" }),
  capabilities: async (c) => c.json(await capabilitiesDocument(c.get("state"), c.get("identity"))),
  capabilities_check: checkCapability,
};
