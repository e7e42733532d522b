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
import type { HandlerMap } from "../../handlers/types.ts";
import type { z } from "zod";
import type { Identity } from "../../policy/compile.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import { networkPrefix } from "../environments/network.ts";
import {
  answeredNetworkAndPackages,
  checkEnv,
  checkSteps,
  refuseUnsupported,
  type SetupStep,
  setupSteps,
} from "../environments/settings.ts";
import { runSetup } from "../environments/setup.ts";
import { createWorkspace, materialise, workspaceDir } from "../environments/workspace.ts";
import { newId, unixNow } from "../ids.ts";
import { type Commit, idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../request.ts";
import {
  environmentCreateSchema,
  type EnvironmentFileParam,
  environmentFileSchema,
  type EnvironmentSettings,
} from "../schemas/environments.ts";
import { type AgentsService, agentsService } from "../service.ts";
import { tenantOf } from "../tenants.ts";
import type { AgentStore, StoredObject } from "../store.ts";
import { templateSettings } from "./templates.ts";

/** What is sealed with an environment: what it runs, which may hold secrets. */
export interface EnvironmentSecrets {
  /** Variables of its processes. */
  env: Record<string, string>;
  /** Its setup steps. */
  steps: SetupStep[];
}

/** The most files an environment's answer lists. */
const MAX_LISTED_FILES = 1000;

function fileRows(store: AgentStore, environmentId: string): StoredObject[] {
  return store.list("environment_file", environmentId, "asc", MAX_LISTED_FILES, undefined).rows;
}

/** An environment as answered: its body with its files. */
export function presentEnvironment(
  store: AgentStore,
  o: StoredObject,
): { id: string; files: unknown[] } {
  const files = fileRows(store, o.id).map((f) => {
    const b = f.body;
    return b.file_id
      ? { id: f.id, type: "file_id", file_id: b.file_id, path: b.path, size_bytes: b.size_bytes }
      : { id: f.id, type: "inline", path: b.path, size_bytes: b.size_bytes };
  });
  return { ...o.body, id: o.id, files };
}

function environmentFile(environmentId: string, path: string, size: number) {
  return {
    environment_id: environmentId,
    object: "agent.environment.file",
    path,
    size_bytes: size,
  };
}

/** A file's record, once its bytes are in the workspace. */
interface FileRecord {
  id: string;
  body: Record<string, unknown>;
}

/** Write a file into the environment's workspace; returns the record that says so. */
async function writeFile(
  state: ServerState,
  service: AgentsService,
  environmentId: string,
  file: EnvironmentFileParam,
  param: string,
  owner: string,
): Promise<FileRecord> {
  const workspace = workspaceDir(state, environmentId);
  const size = await materialise(state, service, workspace, file, param, owner);
  return {
    id: `envfile_${environmentId.slice(4)}:${file.path}`,
    body: {
      path: file.path,
      size_bytes: size,
      ...(file.type === "file_id" ? { file_id: file.file_id } : {}),
    },
  };
}

/** Store a file's record (replacing an earlier one at the same path); inside a transaction. */
function recordFile(store: AgentStore, environmentId: string, record: FileRecord): void {
  store.delete(record.id);
  store.insert("environment_file", record.id, environmentId, unixNow(), record.body, null);
}

/** Write a file and record it (replacing an earlier one at the same path). */
async function addFile(
  state: ServerState,
  service: AgentsService,
  environmentId: string,
  file: EnvironmentFileParam,
  param: string,
  owner: string,
): Promise<number> {
  const record = await writeFile(state, service, environmentId, file, param, owner);
  service.store.transaction(() => recordFile(service.store, environmentId, record));
  return record.body.size_bytes as number;
}

/** Run the setup in the background and record how it ended. */
function startSetup(
  state: ServerState,
  service: AgentsService,
  identity: string,
  environmentId: string,
  secrets: EnvironmentSecrets,
  prefix: string[],
): void {
  const stop = new AbortController();
  service.onClose(() => stop.abort());
  (async () => {
    const outcome = await runSetup(
      state,
      identity,
      workspaceDir(state, environmentId),
      secrets.steps,
      secrets.env,
      prefix,
      stop.signal,
    ).catch((e) => ({ ok: false as const, code: "sandbox_error", message: String(e) }));
    if (stop.signal.aborted) return; // the server is stopping; recovered at the next start
    const found = service.store.get("environment", environmentId);
    if (!found) return;
    const body = {
      ...found.body,
      status: outcome.ok ? "ready" : "failed",
      error: outcome.ok ? null : { code: outcome.code, message: outcome.message },
    };
    service.store.update(environmentId, body);
  })();
}

/** Merge a template's settings under the given ones (given fields win). */
async function seeded(
  service: AgentsService,
  owner: string,
  given: EnvironmentSettings & { environment_template_id?: string },
): Promise<EnvironmentSettings> {
  const id = given.environment_template_id;
  if (id === undefined) return given;
  const template = service.store.get("template", id, "", owner);
  if (!template) throw notFound("environment template", id, "environment.environment_template_id");
  const base = await templateSettings(service, template);
  const merged: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) merged[k] = v;
  return merged as EnvironmentSettings;
}

async function create(c: Context<ServerEnv>): Promise<Response> {
  const { value, text } = await readJson(c, environmentCreateSchema);
  const made = await prepareEnvironment(c.var.state, c.var.identity, value, "environment");
  return idempotentCreate(c, agentsService(c.var.state).store, text, async (commit) => ({
    status: 200,
    body: await made(commit),
  }));
}

/**
 * Check an environment's settings now (refusing with the field named), and return the step
 * that makes it: the workspace and its files' bytes, then its record and its files' records in
 * one transaction (with the kept answer, given a `commit`), then its setup started in the
 * background. Sessions that bring their own environment settings go through here too. The
 * environment is `identity`'s, and the template, vaults and files it names must be its own.
 */
export async function prepareEnvironment(
  state: ServerState,
  identity: Identity,
  value: z.output<typeof environmentCreateSchema>,
  param: string,
): Promise<(commit?: Commit) => Promise<{ id: string; files: unknown[] }>> {
  const service = agentsService(state);
  const { store, box } = service;
  const owner = identity.id;
  const settings = await seeded(service, owner, value.environment);
  refuseUnsupported(settings, param);
  const env = checkEnv(state, settings.env, `${param}.env`);
  const steps = setupSteps(settings);
  checkSteps(state, identity, steps, param);
  const prefix = await networkPrefix(
    settings.network?.access ?? "enabled",
    `${param}.network.access`,
  );
  for (const [i, id] of (value.vault_ids ?? []).entries()) {
    if (!store.get("vault", id, "", owner)) throw notFound("vault", id, `vault_ids[${i}]`);
  }
  const files = settings.files ?? [];
  for (const [i, f] of files.entries()) {
    if (f.type === "file_id" && !store.get("file", f.file_id, "", owner)) {
      throw notFound("file", f.file_id, `${param}.files[${i}].file_id`);
    }
  }
  return async (commit) => {
    const id = newId("environment");
    const now = unixNow();
    const workspace = workspaceDir(state, id);
    await createWorkspace(state, workspace);
    const environment = {
      id,
      object: "agent.environment",
      type: "openai_hosted",
      status: steps.length > 0 ? "pending" : "ready",
      error: null,
      created_at: now,
      environment_template_id: value.environment.environment_template_id ?? null,
      ...answeredNetworkAndPackages(settings),
      plugins: [],
      skills: [],
      vault_ids: value.vault_ids ?? [],
    };
    const secrets: EnvironmentSecrets = { env, steps };
    let presented: { id: string; files: unknown[] };
    try {
      const records: FileRecord[] = [];
      for (const [i, f] of files.entries()) {
        records.push(await writeFile(state, service, id, f, `${param}.files[${i}]`, owner));
      }
      const sealed = await box.seal(secrets, id);
      // All or nothing: the record, its files' records and the kept answer commit together.
      const make = () => {
        store.insert("environment", id, "", now, environment, sealed, owner);
        for (const r of records) recordFile(store, id, r);
        return {
          status: 200,
          body: presentEnvironment(store, store.get("environment", id, "", owner)!),
        };
      };
      presented = (commit ? commit.now(make) : store.transaction(make)).body;
    } catch (e) {
      // No workspace of an environment that was not made.
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
      throw e;
    }
    if (steps.length > 0) startSetup(state, service, identity.id, id, secrets, prefix);
    return presented;
  };
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

/** At start: an environment still `pending` was being set up when the server stopped. */
export function recoverEnvironments(store: AgentStore): void {
  for (const env of store.byField("environment", "status", "pending")) {
    store.update(env.id, {
      ...env.body,
      status: "failed",
      error: {
        code: "server_error",
        message: "The server stopped while this environment was being set up; create it again.",
      },
    });
  }
}
