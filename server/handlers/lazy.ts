/**
 * Handlers whose modules load on first use. The browser (puppeteer), agents (the MCP SDK, the
 * model runtime) and code (kernels) groups are most of the server's module graph and none of
 * them is needed by a server that has not been asked for them: loading them at start made every
 * server, and so every sandbox, wait for them. The endpoint table stays the only source of the
 * routes and capabilities; what loads late is the code behind an id, never whether it exists.
 *
 * The import is made once per process; a failed one is tried again on the next request, and the
 * request that met it answers `internal` through the pipeline like any handler's error.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { EndpointId } from "../endpoints.ts";
import type { EndpointHandler, GroupHandlers, HandlerMap } from "../pipeline/handler.ts";

/**
 * A handler that imports its module on its first request and then delegates to it.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { onFirstUse } from "./lazy.ts";
 * let loads = 0;
 * const handler = onFirstUse(() => {
 *   loads++;
 *   return Promise.resolve(() => new Response("hi"));
 * });
 * assert.equal(loads, 0); // nothing loaded yet
 * // deno-lint-ignore no-explicit-any
 * const c = {} as any;
 * assert.equal(await (await handler(c)).text(), "hi");
 * await handler(c);
 * assert.equal(loads, 1); // loaded once
 * ```
 */
export function onFirstUse(load: () => Promise<EndpointHandler>): EndpointHandler {
  let loading: Promise<EndpointHandler> | undefined;
  return async (c) => {
    loading ??= load().catch((e) => {
      loading = undefined;
      throw e;
    });
    return (await loading)(c);
  };
}

/**
 * A whole group's handlers, one for each of `ids`, whose module loads on the first request to
 * any of them. An id the loaded map turns out not to have answers `internal` (the group's tests
 * check that the table's ids and the loaded map agree).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { groupOnFirstUse } from "./lazy.ts";
 * let loads = 0;
 * const group = groupOnFirstUse(["browser_pdf", "browser_click"], () => {
 *   loads++;
 *   const ok = () => new Response("ok");
 *   return Promise.resolve({ browser_pdf: ok, browser_click: ok });
 * });
 * assert.deepEqual(Object.keys(group), ["browser_pdf", "browser_click"]);
 * // deno-lint-ignore no-explicit-any
 * const c = {} as any;
 * await group.browser_pdf(c);
 * await group.browser_click(c);
 * assert.equal(loads, 1);
 * ```
 */
export function groupOnFirstUse<Id extends EndpointId>(
  ids: readonly Id[],
  load: () => Promise<HandlerMap<Id>>,
): GroupHandlers<Id> {
  let loading: Promise<HandlerMap<Id>> | undefined;
  const group = () =>
    loading ??= load().catch((e) => {
      loading = undefined;
      throw e;
    });
  const handlers = {} as Record<Id, EndpointHandler>;
  for (const id of ids) {
    handlers[id] = async (c) => {
      const handler = (await group())[id];
      if (!handler) throw new ApiError("internal", `No handler for ${id}`);
      return handler(c);
    };
  }
  return handlers;
}
