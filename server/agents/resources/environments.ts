/**
 * `/v1/agents/environments` and their files. An environment is a workspace inside this
 * sandbox (see `../environments/workspace.ts`) with its files written, its `env` kept for the
 * processes it runs, its packages installed and its `setup_commands` run under the caller's
 * policy. It is answered `pending` while that runs in the background, then `ready`, or
 * `failed` with the failing command's output in `error`.
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import {
  addFile,
  environmentFile,
  prepareEnvironment,
  presentEnvironment,
} from "../domain/environments.ts";
import { idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import { environmentCreateSchema, environmentFileSchema } from "../schemas/environments.ts";
import { agentsService } from "../service.ts";
import { tenantOf } from "../tenants.ts";
import type { StoredObject } from "../store.ts";

async function create(c: Context<ServerEnv>): Promise<Response> {
  const { value, text } = await readJson(c, environmentCreateSchema);
  const state = c.var.state;
  const made = await prepareEnvironment(
    agentsService(state),
    state,
    c.var.identity,
    value,
    "environment",
  );
  return idempotentCreate(c, agentsService(state).store, text, async (commit) => ({
    status: 200,
    body: await made(commit),
  }));
}

function environmentOf(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("environment_id")!;
  const found = store.get("environment", id, "", tenantOf(c).sees);
  if (!found) throw notFound("environment", id, "environment_id");
  return found;
}

/** The environments handlers. */
export const environmentsResourceHandlers: HandlerMap<AgentsId> = {
  agents_environments_create: create,
  agents_environments_retrieve: (c) => {
    const { store } = agentsService(c.var.state);
    return json({ status: 200, body: presentEnvironment(store, environmentOf(c)) });
  },
  agents_environments_list: (c) => {
    const { store } = agentsService(c.var.state);
    const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "type"]);
    const type = q.plain.get("type");
    if (type !== undefined && type !== "openai_hosted") {
      throw invalid("type", `Invalid 'type': expected 'openai_hosted', got '${type}'.`);
    }
    const page = listPage(
      store,
      "environment",
      "",
      pageRequest(q),
      (o) => presentEnvironment(store, o),
      { owner: tenantOf(c).sees },
    );
    return json({ status: 200, body: page });
  },
  agents_environments_files_create: async (c) => {
    const state = c.var.state;
    const service = agentsService(state);
    const environment = environmentOf(c);
    const { value } = await readJson(c, environmentFileSchema);
    // The file must be the environment owner's, whoever (an operator) adds it.
    if (
      value.type === "file_id" &&
      !service.store.get("file", value.file_id, "", environment.owner)
    ) {
      throw notFound("file", value.file_id, "file_id");
    }
    const size = await addFile(state, service, environment.id, value, "file", environment.owner);
    return json({ status: 200, body: environmentFile(environment.id, value.path, size) });
  },
  agents_environments_files_list: (c) => {
    const { store } = agentsService(c.var.state);
    const environment = environmentOf(c);
    const q = parseQuery(new URL(c.req.url).search, ["page", "limit", "order", "path"]);
    const page = pageRequest(q, "page");
    let after: string | undefined;
    if (page.after !== undefined) {
      try {
        after = new TextDecoder("utf-8", { fatal: true }).decode(
          Uint8Array.from(atob(page.after), (ch) => ch.charCodeAt(0)),
        );
      } catch {
        throw invalid("page", "Invalid 'page': not a page token of this list.");
      }
    }
    const path = q.plain.get("path");
    const list = listPage(
      store,
      "environment_file",
      environment.id,
      { ...page, after },
      (o) => ({
        id: o.id,
        ...environmentFile(environment.id, o.body.path as string, o.body.size_bytes as number),
      }),
      path === undefined ? {} : { prefix: { name: "path", value: path } },
      "page",
    );
    const next = list.has_more && list.last_id
      ? btoa(String.fromCharCode(...new TextEncoder().encode(list.last_id)))
      : null;
    return json({
      status: 200,
      body: {
        object: "list",
        data: list.data.map(({ id: _id, ...file }) => file),
        has_more: list.has_more,
        next,
      },
    });
  },
};
