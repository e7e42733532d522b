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
import { ENDPOINT_ROWS, type EndpointGroup, type EndpointId, type GroupId } from "../endpoints.ts";
import { groupOnFirstUse } from "./lazy.ts";
import type { GroupHandlers, HandlerMap } from "../pipeline/handler.ts";

/** The groups whose code loads on their first request: all but core and process. */
type LazyGroup = Exclude<EndpointGroup, "core" | "process">;

/**
 * How each of those groups gets its handlers. Each import names its module literally, so that
 * Deno's module graph (type checks, `deno cache`, `deno publish`) still sees it.
 */
const LOADERS: { readonly [G in LazyGroup]: () => Promise<HandlerMap<GroupId<G>>> } = {
  commands: async () => (await import("./named_commands/index.ts")).commandsHandlers,
  file_ops: async () => (await import("./file_ops/index.ts")).fileOpsHandlers,
  terminal: async () => (await import("./terminal/index.ts")).terminalHandlers,
  system: async () => (await import("./system/index.ts")).systemHandlers,
  dev_tools: async () => (await import("./dev_tools/index.ts")).devToolsHandlers,
  browser: async () => (await import("./browser/index.ts")).browserHandlers,
  agents: async () => (await import("../agents/handlers.ts")).agentsHandlers,
};

/** A group's handlers, one for each of its ids in the endpoint table, loaded on first use. */
function onFirstRequest<G extends LazyGroup>(group: G): GroupHandlers<GroupId<G>> {
  const ids = ENDPOINT_ROWS[group].map((row) => row[0]) as GroupId<G>[];
  return groupOnFirstUse(ids, LOADERS[group]);
}

/** All handlers: every group is complete, which the type check enforces. */
export const HANDLERS: HandlerMap = {
  ...coreHandlers,
  ...onFirstRequest("commands"),
  ...onFirstRequest("file_ops"),
  ...processHandlers,
  ...onFirstRequest("system"),
  ...onFirstRequest("dev_tools"),
  ...onFirstRequest("terminal"),
  ...onFirstRequest("browser"),
  ...onFirstRequest("agents"),
} satisfies GroupHandlers<EndpointId>;

/** The groups most sandboxes use soon after they start. */
const USED_SOON: readonly LazyGroup[] = ["file_ops", "terminal", "system", "dev_tools", "commands"];

/**
 * Load the groups that most sandboxes use soon ({@linkcode USED_SOON}), so that their first
 * request does not: for a server with time to spare before its first caller, such as a pooled one
 * waiting for its claim.
 */
export async function groupsUsedSoon(): Promise<void> {
  await Promise.all(USED_SOON.map((group) => LOADERS[group]()));
}
