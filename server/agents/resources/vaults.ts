/**
 * `/v1/vaults` and their credentials. Inside the sandbox a vault holds the secrets that agent
 * tools need (an MCP server's bearer token or OAuth tokens, a variable such as
 * `OPENAI_API_KEY` for a session's upstream), so that code and callers never see them: secrets
 * are sealed at rest (see `../crypto.ts`) and never returned, not even by create.
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import { newId, unixNow } from "../ids.ts";
import { idempotentCreate, json, jsonText } from "../idempotency.ts";
import { listPageText, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import {
  credentialCreateSchema,
  credentialUpdateSchema,
  vaultCreateSchema,
  vaultUpdateSchema,
} from "../schemas/vaults.ts";
import { agentsService } from "../service.ts";
import { tenantOf } from "../tenants.ts";
import type { ListFilter, StoredObject } from "../store.ts";
import type { z } from "zod";

type AuthCreate = z.output<typeof credentialCreateSchema>["auth"];
type AuthRotate = NonNullable<z.output<typeof credentialUpdateSchema>["auth"]>;
type Secrets = Record<string, string>;

/** A list's `metadata[k]=v` and `status`/`status[]` filters. Every vault and credential is active. */
function listFilters(c: Context<ServerEnv>): {
  q: ReturnType<typeof parseQuery>;
  filter: ListFilter;
  none: boolean;
} {
  const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "metadata", "status"]);
  const statuses = [...(q.lists.get("status") ?? [])];
  const single = q.plain.get("status");
  if (single !== undefined) statuses.push(single);
  for (const s of statuses) {
    if (s !== "active" && s !== "archived") {
      throw invalid("status", `Invalid 'status': expected 'active' or 'archived', got '${s}'.`);
    }
  }
  const metadata = q.maps.get("metadata");
  return {
    q,
    filter: metadata ? { metadata: Object.fromEntries(metadata) } : {},
    // Nothing is ever archived here, so asking only for archived ones finds none.
    none: statuses.length > 0 && !statuses.includes("active"),
  };
}

function emptyPage() {
  return { object: "list", data: [], first_id: null, last_id: null, has_more: false };
}

/** The secret-free part of an auth, and its secrets. */
function splitAuth(auth: AuthCreate): { pub: Record<string, unknown>; secrets: Secrets } {
  switch (auth.type) {
    case "static_bearer":
      return {
        pub: { type: auth.type, mcp_server_url: auth.mcp_server_url },
        secrets: { token: auth.token },
      };
    case "environment_variable":
      return {
        pub: { type: auth.type, secret_name: auth.secret_name, networking: auth.networking },
        secrets: { secret_value: auth.secret_value },
      };
    case "mcp_oauth": {
      const secrets: Secrets = { access_token: auth.access_token };
      let refresh: Record<string, unknown> | null = null;
      if (auth.refresh) {
        const r = auth.refresh;
        secrets.refresh_token = r.refresh_token;
        if (r.token_endpoint_auth.type !== "none") {
          secrets.client_secret = r.token_endpoint_auth.client_secret;
        }
        refresh = {
          client_id: r.client_id,
          resource: r.resource ?? null,
          scope: r.scope ?? null,
          token_endpoint: r.token_endpoint,
          token_endpoint_auth: { type: r.token_endpoint_auth.type },
        };
      }
      return {
        pub: {
          type: auth.type,
          expires_at: auth.expires_at ?? null,
          mcp_server_url: auth.mcp_server_url,
          refresh,
        },
        secrets,
      };
    }
  }
}

/** Rotate: replace the secrets given, and the public fields a rotation carries. */
function rotate(pub: Record<string, unknown>, secrets: Secrets, auth: AuthRotate): void {
  if (pub.type !== auth.type) {
    throw invalid(
      "auth.type",
      `Invalid 'auth.type': this credential is '${pub.type}'; a rotation keeps the type.`,
    );
  }
  if (auth.type === "static_bearer") secrets.token = auth.token;
  else if (auth.type === "environment_variable") secrets.secret_value = auth.secret_value;
  else {
    if (auth.access_token) secrets.access_token = auth.access_token;
    if (auth.expires_at !== undefined) pub.expires_at = auth.expires_at;
    const r = auth.refresh;
    if (r) {
      const refresh = pub.refresh as Record<string, unknown> | null;
      if (!refresh) {
        throw invalid(
          "auth.refresh",
          "Invalid 'auth.refresh': this credential has no refresh settings.",
        );
      }
      if (r.refresh_token) secrets.refresh_token = r.refresh_token;
      if (r.scope !== undefined) refresh.scope = r.scope;
      if (r.token_endpoint_auth) {
        refresh.token_endpoint_auth = { type: r.token_endpoint_auth.type };
        if (r.token_endpoint_auth.type === "none") delete secrets.client_secret;
        else if (r.token_endpoint_auth.client_secret) {
          secrets.client_secret = r.token_endpoint_auth.client_secret;
        }
      }
    }
  }
}

function vaultOf(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("vault_id")!;
  const vault = store.get("vault", id, "", tenantOf(c).sees);
  if (!vault) throw notFound("vault", id, "vault_id");
  return vault;
}

function credentialOf(c: Context<ServerEnv>, vaultId: string): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("credential_id")!;
  const cred = store.get("credential", id, vaultId);
  if (!cred) throw notFound("credential", id, "credential_id");
  return cred;
}

/** The vault and credential handlers. */
export const vaultsResourceHandlers: HandlerMap<AgentsId> = {
  agents_vaults_create: async (c) => {
    const { store } = agentsService(c.var.state);
    const owner = tenantOf(c).id;
    const body = await readJson(c, vaultCreateSchema);
    return idempotentCreate(c, store, body.text, async (commit) => {
      const now = unixNow();
      const vault = {
        id: newId("vault"),
        object: "vault",
        created_at: now,
        metadata: body.value.metadata ?? {},
        name: body.value.name ?? null,
      };
      const answer = { status: 200, body: vault };
      await commit.soon(answer, () => store.insert("vault", vault.id, "", now, vault, null, owner));
      return answer;
    });
  },
  agents_vaults_retrieve: (c) => json({ status: 200, body: vaultOf(c).body }),
  agents_vaults_update: async (c) => {
    const { store } = agentsService(c.var.state);
    const body = await readJson(c, vaultUpdateSchema);
    const vault = { ...vaultOf(c).body };
    if (body.value.metadata !== undefined) vault.metadata = body.value.metadata ?? {};
    if (body.value.name !== undefined) vault.name = body.value.name;
    store.update(vault.id as string, vault);
    return json({ status: 200, body: vault });
  },
  agents_vaults_list: (c) => {
    const { store } = agentsService(c.var.state);
    const { q, filter, none } = listFilters(c);
    const page = pageRequest(q);
    if (none) return json({ status: 200, body: emptyPage() });
    return jsonText(
      listPageText(store, "vault", "", page, { ...filter, owner: tenantOf(c).sees }),
    );
  },
  agents_vaults_delete: (c) => {
    const { store } = agentsService(c.var.state);
    const vault = vaultOf(c);
    store.delete(vault.id);
    return json({ status: 200, body: { id: vault.id, deleted: true, object: "vault.deleted" } });
  },
  agents_vaults_credentials_create: async (c) => {
    const { store, box } = agentsService(c.var.state);
    const vault = vaultOf(c);
    const body = await readJson(c, credentialCreateSchema);
    return idempotentCreate(c, store, body.text, async (commit) => {
      const now = unixNow();
      const id = newId("credential");
      const { pub, secrets } = splitAuth(body.value.auth);
      const credential = {
        id,
        object: "vault.credential",
        vault_id: vault.id,
        name: body.value.name,
        metadata: body.value.metadata ?? {},
        created_at: now,
        updated_at: now,
        auth: pub,
      };
      const sealed = await box.seal(secrets, id);
      const answer = { status: 200, body: credential };
      await commit.soon(
        answer,
        () => store.insert("credential", id, vault.id, now, credential, sealed),
      );
      return answer;
    });
  },
  agents_vaults_credentials_retrieve: (c) => {
    const vault = vaultOf(c);
    return json({ status: 200, body: credentialOf(c, vault.id).body });
  },
  agents_vaults_credentials_update: async (c) => {
    const { store, box } = agentsService(c.var.state);
    const vault = vaultOf(c);
    const body = await readJson(c, credentialUpdateSchema);
    const found = credentialOf(c, vault.id);
    const credential: Record<string, unknown> = {
      ...found.body,
      auth: structuredClone(found.body.auth),
    };
    if (body.value.metadata !== undefined) credential.metadata = body.value.metadata ?? {};
    let sealed: Uint8Array | undefined;
    if (body.value.auth) {
      const secrets = await box.open(found.sealed!, found.id) as Secrets;
      rotate(credential.auth as Record<string, unknown>, secrets, body.value.auth);
      sealed = await box.seal(secrets, found.id);
    }
    credential.updated_at = unixNow();
    store.update(found.id, credential, sealed);
    return json({ status: 200, body: credential });
  },
  agents_vaults_credentials_list: (c) => {
    const { store } = agentsService(c.var.state);
    const vault = vaultOf(c);
    const { q, filter, none } = listFilters(c);
    const page = pageRequest(q);
    if (none) return json({ status: 200, body: emptyPage() });
    return jsonText(listPageText(store, "credential", vault.id, page, filter));
  },
  agents_vaults_credentials_delete: (c) => {
    const { store } = agentsService(c.var.state);
    const vault = vaultOf(c);
    const cred = credentialOf(c, vault.id);
    store.delete(cred.id);
    return json({
      status: 200,
      body: { id: cred.id, deleted: true, object: "vault.credential.deleted" },
    });
  },
};
