/**
 * Environments as plain functions over the store: checking an environment's settings and making
 * it (its workspace, its files' bytes and records, its sealed `env` and setup steps, its setup
 * run in the background), presenting it with its files, a template's settings, and the recovery
 * at start of one whose setup a stopped server left `pending`. The HTTP resources
 * (`resources/environments.ts`, `resources/templates.ts`) and sessions that bring their own
 * settings (`domain/sessions.ts`) call these; nothing here reads a request.
 *
 * @module
 */

import { removeEntry } from "../../files/entry_ops.ts";
import type { z } from "zod";
import type { Identity } from "../../policy/compile.ts";
import type { ServerState } from "../../state.ts";
import type { AgentsCore } from "../core.ts";
import { notFound } from "../errors.ts";
import { networkPrefix } from "../environments/network.ts";
import { usesVenv, venvDir, venvPython } from "../environments/python_venv.ts";
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
import type { Commit } from "../idempotency.ts";
import type {
  environmentCreateSchema,
  EnvironmentFileParam,
  EnvironmentSettings,
} from "../schemas/environments.ts";
import type { AgentStore, StoredObject } from "../store.ts";

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

/** An environment file as answered. */
export function environmentFile(environmentId: string, path: string, size: number) {
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
  service: AgentsCore,
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
export async function addFile(
  state: ServerState,
  service: AgentsCore,
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
  service: AgentsCore,
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
      usesVenv(secrets.steps) ? venvDir(workspaceDir(state, environmentId)) : null,
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
  service: AgentsCore,
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

/**
 * Check an environment's settings now (refusing with the field named), and return the step
 * that makes it: the workspace and its files' bytes, then its record and its files' records in
 * one transaction (with the kept answer, given a `commit`), then its setup started in the
 * background. Sessions that bring their own environment settings go through here too. The
 * environment is `identity`'s, and the template, vaults and files it names must be its own.
 */
export async function prepareEnvironment(
  service: AgentsCore,
  state: ServerState,
  identity: Identity,
  value: z.output<typeof environmentCreateSchema>,
  param: string,
): Promise<(commit?: Commit) => Promise<{ id: string; files: unknown[] }>> {
  const { store, box } = service;
  const owner = identity.id;
  const settings = await seeded(service, owner, value.environment);
  refuseUnsupported(settings, param);
  const env = checkEnv(state, settings.env, `${param}.env`);
  const python = settings.packages?.python?.length ? await venvPython(state) : undefined;
  const steps = setupSteps(settings, python);
  checkSteps(state, identity, steps, param);
  const prefix = await networkPrefix(
    settings.network?.access ?? "enabled",
    `${param}.network.access`,
    {
      state,
      owner,
      allowed: settings.network?.allowed_domains ?? [],
      blocked: [],
    },
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
      // No workspace of an environment that was not made. Removed below its parent held by
      // descriptor, never following a link: a swapped `agent-environments` removes nothing else.
      await removeEntry(workspace, { directory: true, recursive: true, noSymlinks: true })
        .catch(() => {});
      throw e;
    }
    if (steps.length > 0) startSetup(state, service, identity.id, id, secrets, prefix);
    return presented;
  };
}

/** A template's settings whole (sealed half opened), to seed an environment. */
export async function templateSettings(
  core: Pick<AgentsCore, "box">,
  template: StoredObject,
): Promise<EnvironmentSettings> {
  const sealed = await core.box.open(template.sealed!, template.id) as {
    settings: EnvironmentSettings;
  };
  return sealed.settings;
}

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
