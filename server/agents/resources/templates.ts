/**
 * `/v1/agents/environments/templates`: named environment settings that seed environments
 * (`environment.environment_template_id`). A template runs nothing by itself. Its `env`,
 * `setup_commands` and inline file contents are sealed like vault secrets and never returned;
 * the answer lists its files by path and size.
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { notFound } from "../errors.ts";
import {
  answeredNetworkAndPackages,
  checkEnv,
  refuseUnsupported,
  setupSteps,
} from "../environments/settings.ts";
import { newId, unixNow } from "../ids.ts";
import { idempotentCreate, json, jsonText } from "../idempotency.ts";
import { listPageText, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import { type EnvironmentSettings, templateSchema } from "../schemas/environments.ts";
import { type AgentsService, agentsService } from "../service.ts";
import { templateSettings } from "../domain/environments.ts";
import { tenantOf } from "../tenants.ts";
import type { StoredObject } from "../store.ts";
import { commandRules, guardShellCommand } from "../../guards/commands/index.ts";

type Settings = EnvironmentSettings;

/** Check what a template stores, naming fields as the body does. */
function check(c: Context<ServerEnv>, settings: Settings): void {
  refuseUnsupported(settings, "template");
  checkEnv(c.var.state, settings.env, "env");
  setupSteps(settings);
  const rules = commandRules(c.var.state.policy);
  for (const [i, s] of (settings.setup_commands ?? []).entries()) {
    guardShellCommand(rules, s.command, `setup_commands[${i}].command`);
  }
}

function publicBody(
  id: string,
  settings: Settings,
  createdAt: number,
  updatedAt: number,
): Record<string, unknown> {
  return {
    id,
    object: "agent.environment.template",
    name: settings.name ?? null,
    created_at: createdAt,
    updated_at: updatedAt,
    capability_directories: [],
    files: (settings.files ?? []).map((f) =>
      f.type === "file_id" ? { type: "file_id", file_id: f.file_id, path: f.path } : {
        type: "inline",
        path: f.path,
        size_bytes: Math.floor((f.data.replace(/=+$/, "").length * 3) / 4),
      }
    ),
    ...answeredNetworkAndPackages(settings),
    plugins: [],
    skills: [],
  };
}

async function seal(service: AgentsService, id: string, settings: Settings): Promise<Uint8Array> {
  return await service.box.seal({ settings }, id);
}

function templateOf(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("environment_template_id")!;
  const found = store.get("template", id, "", tenantOf(c).sees);
  if (!found) throw notFound("environment template", id, "environment_template_id");
  return found;
}

/** The templates handlers. */
export const templatesResourceHandlers: HandlerMap<AgentsId> = {
  agents_environments_templates_create: async (c) => {
    const service = agentsService(c.var.state);
    const owner = tenantOf(c).id;
    const { value, text } = await readJson(c, templateSchema);
    check(c, value);
    for (const [i, f] of (value.files ?? []).entries()) {
      if (f.type === "file_id" && !service.store.get("file", f.file_id, "", owner)) {
        throw notFound("file", f.file_id, `files[${i}].file_id`);
      }
    }
    return idempotentCreate(c, service.store, text, async (commit) => {
      const id = newId("template");
      const now = unixNow();
      const body = publicBody(id, value, now, now);
      const sealed = await seal(service, id, value);
      const answer = { status: 200, body };
      await commit.soon(
        answer,
        () => service.store.insert("template", id, "", now, body, sealed, owner),
      );
      return answer;
    });
  },
  agents_environments_templates_retrieve: (c) => json({ status: 200, body: templateOf(c).body }),
  agents_environments_templates_update: async (c) => {
    const service = agentsService(c.var.state);
    const found = templateOf(c);
    const { value } = await readJson(c, templateSchema);
    const settings: Record<string, unknown> = { ...await templateSettings(service, found) };
    for (const [k, v] of Object.entries(value)) if (v !== undefined) settings[k] = v;
    check(c, settings as Settings);
    const body = publicBody(
      found.id,
      settings as Settings,
      found.body.created_at as number,
      unixNow(),
    );
    service.store.update(found.id, body, await seal(service, found.id, settings as Settings));
    return json({ status: 200, body });
  },
  agents_environments_templates_list: (c) => {
    const { store } = agentsService(c.var.state);
    const q = parseQuery(new URL(c.req.url).search, PAGE_PARAMS);
    return jsonText(
      listPageText(store, "template", "", pageRequest(q), { owner: tenantOf(c).sees }),
    );
  },
  agents_environments_templates_delete: (c) => {
    const { store } = agentsService(c.var.state);
    const found = templateOf(c);
    store.delete(found.id);
    return json({
      status: 200,
      body: { id: found.id, deleted: true, object: "agent.environment.template.deleted" },
    });
  },
};
