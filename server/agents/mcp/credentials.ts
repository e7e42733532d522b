/**
 * The vault credential an MCP HTTP server is reached with (`credential_id` on the agent's tool):
 *
 * - `static_bearer`: its `token` is sent as `Authorization: Bearer …`.
 * - `mcp_oauth`: its `access_token` likewise. When `expires_at` has passed (or is less than a
 *   minute away) before a request, or the server answers 401, and the credential has `refresh`
 *   settings, the access token is refreshed at `refresh.token_endpoint` with the stored refresh
 *   token (grant `refresh_token`, client authentication as `token_endpoint_auth` says, with
 *   `scope` and `resource` when set), through the URL guard. The new tokens (and `expires_at`)
 *   are sealed back into the credential, so the next session starts with them. One refresh per
 *   credential runs at a time in this server.
 *
 * A credential is sent only to the origin of its own `mcp_server_url`; a server elsewhere is
 * refused (`credential_invalid`), so an agent cannot carry a token to a host it was not issued
 * for. Secrets are kept in this module's closures and never put in an error.
 *
 * @module
 */

import { refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js";
import type { AuthorizationServerMetadata } from "@modelcontextprotocol/sdk/shared/auth.js";
import { OAuthError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { unixNow } from "../ids.ts";
import { openCredentialSecrets } from "../domain/vaults.ts";
import { McpServerError, redact } from "./errors.ts";
import type { GuardedFetch } from "./guarded_fetch.ts";
import { UrlRefusedError } from "./guarded_fetch.ts";
import type { McpContext } from "./types.ts";

/** Refresh this long before `expires_at`, so a token does not expire in flight. */
const EXPIRY_MARGIN_MS = 60_000;

/** Where a request's bearer token comes from. */
export interface BearerSource {
  /** The token to send now (refreshed first when known to be expired). */
  token(): Promise<string>;
  /**
   * After the server refused `used`: a fresh token, or `null` when none can be had (no
   * refresh settings). Throws a {@linkcode McpServerError} when the refresh fails.
   */
  refresh(used: string): Promise<string | null>;
  /** Every secret in play, for {@linkcode redact}. */
  secrets(): string[];
}

type Secrets = Record<string, string>;

interface RefreshSettings {
  client_id: string;
  resource: string | null;
  scope: string | null;
  token_endpoint: string;
  token_endpoint_auth: { type: "none" | "client_secret_basic" | "client_secret_post" };
}

/** Refreshes in flight, by credential id. */
const refreshing = new Map<string, Promise<string>>();

/** `expires_at` as milliseconds: an ISO 8601 time, or Unix seconds. */
export function expiryTime(expiresAt: unknown): number | null {
  if (typeof expiresAt !== "string" || expiresAt === "") return null;
  if (/^\d+$/.test(expiresAt)) return Number(expiresAt) * 1000;
  const t = Date.parse(expiresAt);
  return Number.isNaN(t) ? null : t;
}

/** The bearer source of `credentialId` for a server at `serverUrl`, checked. */
export async function credentialBearer(
  label: string,
  credentialId: string,
  serverUrl: string,
  ctx: McpContext,
  guarded: GuardedFetch,
): Promise<BearerSource> {
  const { store } = ctx.core;
  const found = store.get("credential", credentialId, undefined, ctx.identity.id);
  const vaultId = found?.body.vault_id as string | undefined;
  if (!found || (ctx.vaultIds && !ctx.vaultIds.includes(vaultId!))) {
    throw new McpServerError(
      label,
      "credential_not_found",
      `no credential '${credentialId}' in ${ctx.vaultIds ? "the session's vaults" : "any vault"}`,
      { param: "credential_id" },
    );
  }
  const auth = found.body.auth as Record<string, unknown>;
  if (auth.type !== "static_bearer" && auth.type !== "mcp_oauth") {
    throw new McpServerError(
      label,
      "credential_invalid",
      `credential '${credentialId}' is of type ${auth.type}; an MCP server takes static_bearer or mcp_oauth`,
      { param: "credential_id" },
    );
  }
  const issuedFor = new URL(auth.mcp_server_url as string).origin;
  if (issuedFor !== new URL(serverUrl).origin) {
    throw new McpServerError(
      label,
      "credential_invalid",
      `credential '${credentialId}' is for ${issuedFor}, not ${new URL(serverUrl).origin}`,
      { param: "credential_id" },
    );
  }
  let secrets = await openCredentialSecrets(ctx.core, found) as Secrets;
  if (auth.type === "static_bearer") {
    return {
      token: () => Promise.resolve(secrets.token),
      refresh: () => Promise.resolve(null),
      secrets: () => Object.values(secrets),
    };
  }
  const settings = auth.refresh as RefreshSettings | null;
  let expiresAt = expiryTime(auth.expires_at);
  const refresh = async (): Promise<string> => {
    let flight = refreshing.get(credentialId);
    if (!flight) {
      flight = refreshToken(label, credentialId, ctx, guarded).finally(() =>
        refreshing.delete(credentialId)
      );
      refreshing.set(credentialId, flight);
    }
    await flight;
    // Read back what was stored: another session's refresh may have been the one that ran.
    const latest = store.get("credential", credentialId, undefined, ctx.identity.id);
    if (latest) {
      secrets = await openCredentialSecrets(ctx.core, latest) as Secrets;
      expiresAt = expiryTime((latest.body.auth as Record<string, unknown>).expires_at);
    }
    return secrets.access_token;
  };
  return {
    async token() {
      if (settings && expiresAt !== null && expiresAt - EXPIRY_MARGIN_MS <= Date.now()) {
        return await refresh();
      }
      return secrets.access_token;
    },
    async refresh(used) {
      if (!settings) return null;
      if (secrets.access_token !== used) return secrets.access_token;
      return await refresh();
    },
    secrets: () => Object.values(secrets),
  };
}

/** Run the refresh grant and seal the answer into the credential; resolves to the new token. */
async function refreshToken(
  label: string,
  credentialId: string,
  ctx: McpContext,
  guarded: GuardedFetch,
): Promise<string> {
  const { store, box } = ctx.core;
  const current = store.get("credential", credentialId, undefined, ctx.identity.id);
  if (!current) {
    throw new McpServerError(
      label,
      "credential_not_found",
      `credential '${credentialId}' is gone`,
      {
        param: "credential_id",
      },
    );
  }
  const auth = current.body.auth as Record<string, unknown>;
  const settings = auth.refresh as RefreshSettings;
  const secrets = await openCredentialSecrets(ctx.core, current) as Secrets;
  const method = settings.token_endpoint_auth.type;
  let tokens;
  try {
    tokens = await refreshAuthorization(settings.token_endpoint, {
      metadata: { token_endpoint: settings.token_endpoint } as AuthorizationServerMetadata,
      clientInformation: { client_id: settings.client_id },
      refreshToken: secrets.refresh_token,
      addClientAuthentication: (headers: Headers, params: URLSearchParams) => {
        if (method === "client_secret_basic") {
          const id = encodeURIComponent(settings.client_id);
          const secret = encodeURIComponent(secrets.client_secret);
          headers.set("authorization", `Basic ${btoa(`${id}:${secret}`)}`);
        } else {
          params.set("client_id", settings.client_id);
          if (method === "client_secret_post") params.set("client_secret", secrets.client_secret);
        }
        if (settings.scope) params.set("scope", settings.scope);
        if (settings.resource) params.set("resource", settings.resource);
      },
      fetchFn: guarded.fetch,
    });
  } catch (e) {
    if (e instanceof UrlRefusedError) {
      throw new McpServerError(
        label,
        e.refusal.code,
        `the token endpoint: ${e.refusal.message}`,
        { rule: e.refusal.rule, param: "credential_id" },
      );
    }
    // The SDK's OAuth errors carry the endpoint's `error` code apart from its description.
    const code = e instanceof OAuthError ? (e as OAuthError).errorCode : undefined;
    const text = [code, (e as Error).message].filter(Boolean).join(": ");
    const why = redact(text, Object.values(secrets));
    throw new McpServerError(
      label,
      "credential_refresh_failed",
      `refreshing the access token of credential '${credentialId}' failed: ${why}`,
      { param: "credential_id" },
    );
  }
  const next: Secrets = { ...secrets, access_token: tokens.access_token };
  if (tokens.refresh_token) next.refresh_token = tokens.refresh_token;
  const body = {
    ...current.body,
    auth: {
      ...auth,
      expires_at: tokens.expires_in !== undefined
        ? new Date(Date.now() + tokens.expires_in * 1000).toISOString()
        : null,
    },
    updated_at: unixNow(),
  };
  store.update(credentialId, body, await box.seal(next, credentialId));
  return tokens.access_token;
}
