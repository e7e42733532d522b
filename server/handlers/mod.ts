/**
 * Every group's handlers, by endpoint id. An id of the endpoint table without a handler here is
 * reported and answered as off with the rule `code:unimplemented:<group>`.
 *
 * The browser and agents groups load on their first request (`./lazy.ts`): their ids come from
 * the endpoint table, their code (puppeteer; the MCP SDK and the model runtime) only when asked
 * for, so a server that serves neither never loads them. So do the files, terminal, system, dev
 * tools and named commands groups: a sandbox's start needs only the core group (its supervisor
 * reads the capabilities) and the process group (the first command); loading the others before
 * listening cost a local sandbox's server ~10 ms of its start, and their first request now pays
 * ~7 ms instead (`groupsUsedSoon` loads them ahead where there is time).
 *
 * @module
 */

import { coreHandlers } from "./core/index.ts";
import { processHandlers } from "./process/index.ts";
import { ENDPOINT_ROWS, type EndpointId } from "../endpoints.ts";
import { groupOnFirstUse } from "./lazy.ts";
import type { GroupHandlers, HandlerMap } from "../pipeline/handler.ts";

/** The browser group, loaded on its first request. */
const browserHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.browser.map((row) => row[0]),
  async () => (await import("./browser/index.ts")).browserHandlers,
);

/** The agents group (`/v1/`), loaded on its first request. */
const agentsHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.agents.map((row) => row[0]),
  async () => (await import("../agents/handlers.ts")).agentsHandlers,
);

/** The files group, loaded on its first request. */
const fileOpsHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.file_ops.map((row) => row[0]),
  async () => (await import("./file_ops/index.ts")).fileOpsHandlers,
);

/** The terminal group, loaded on its first request. */
const terminalHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.terminal.map((row) => row[0]),
  async () => (await import("./terminal/index.ts")).terminalHandlers,
);

/** The system group, loaded on its first request. */
const systemHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.system.map((row) => row[0]),
  async () => (await import("./system/index.ts")).systemHandlers,
);

/** The dev tools group (git, code runs), loaded on its first request. */
const devToolsHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.dev_tools.map((row) => row[0]),
  async () => (await import("./dev_tools/index.ts")).devToolsHandlers,
);

/** The named commands group, loaded on its first request. */
const commandsHandlers = groupOnFirstUse(
  ENDPOINT_ROWS.commands.map((row) => row[0]),
  async () => (await import("./named_commands/index.ts")).commandsHandlers,
);

/** All handlers: every group is complete, which the type check enforces. */
export const HANDLERS: HandlerMap = {
  ...coreHandlers,
  ...commandsHandlers,
  ...fileOpsHandlers,
  ...processHandlers,
  ...systemHandlers,
  ...devToolsHandlers,
  ...terminalHandlers,
  ...browserHandlers,
  ...agentsHandlers,
} satisfies GroupHandlers<EndpointId>;

/**
 * Load the groups above that most sandboxes use soon (files, terminal, system, dev tools, named
 * commands), so that their first request does not: for a server with time to spare before its
 * first caller, such as a pooled one waiting for its claim.
 */
export async function groupsUsedSoon(): Promise<void> {
  await Promise.all([
    import("./file_ops/index.ts"),
    import("./terminal/index.ts"),
    import("./system/index.ts"),
    import("./dev_tools/index.ts"),
    import("./named_commands/index.ts"),
  ]);
}
