/**
 * Request bodies of the vault and credential endpoints (`/v1/vaults…`).
 *
 * @module
 */

import { z } from "zod";
import { metadataSchema } from "./common.ts";

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

/** `POST /v1/vaults`. */
export const vaultCreateSchema = z.strictObject({
  metadata: metadataSchema.nullish(),
  name: z.string().refine((s) => utf8Length(s) >= 1 && utf8Length(s) <= 256, {
    message: "1 to 256 bytes",
  }).optional(),
});

/** `POST /v1/vaults/{vault_id}`. */
export const vaultUpdateSchema = z.strictObject({
  metadata: metadataSchema.nullish(),
  name: z.string().refine((s) => utf8Length(s) >= 1 && utf8Length(s) <= 256, {
    message: "1 to 256 bytes",
  }).nullish(),
});

const secret = z.string().min(1).max(65536);
const url = z.url({ protocol: /^https?$/ });

const refreshSchema = z.strictObject({
  client_id: z.string().min(1),
  refresh_token: secret,
  token_endpoint: url,
  token_endpoint_auth: z.discriminatedUnion("type", [
    z.strictObject({ type: z.literal("none") }),
    z.strictObject({ type: z.literal("client_secret_basic"), client_secret: secret }),
    z.strictObject({ type: z.literal("client_secret_post"), client_secret: secret }),
  ]),
  resource: z.string().nullish(),
  scope: z.string().nullish(),
});

const networkingSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("unrestricted") }),
  z.strictObject({
    type: z.literal("limited"),
    allowed_hosts: z.array(z.string().min(1)).min(1).max(16),
  }),
]);

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a variable name");

/** The `auth` of a credential create. */
export const credentialAuthSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("mcp_oauth"),
    access_token: secret,
    mcp_server_url: url,
    expires_at: z.string().nullish(),
    refresh: refreshSchema.nullish(),
  }),
  z.strictObject({ type: z.literal("static_bearer"), token: secret, mcp_server_url: url }),
  z.strictObject({
    type: z.literal("environment_variable"),
    secret_name: envName,
    secret_value: secret,
    networking: networkingSchema,
  }),
]);

/** The `auth` of a credential update: the same type, replacement secrets only. */
export const credentialRotateSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("mcp_oauth"),
    access_token: secret.nullish(),
    expires_at: z.string().nullish(),
    refresh: z.strictObject({
      refresh_token: secret.nullish(),
      scope: z.string().nullish(),
      token_endpoint_auth: z.discriminatedUnion("type", [
        z.strictObject({ type: z.literal("none") }),
        z.strictObject({ type: z.literal("client_secret_basic"), client_secret: secret.nullish() }),
        z.strictObject({ type: z.literal("client_secret_post"), client_secret: secret.nullish() }),
      ]).nullish(),
    }).nullish(),
  }),
  z.strictObject({ type: z.literal("static_bearer"), token: secret }),
  z.strictObject({ type: z.literal("environment_variable"), secret_value: secret }),
]);

/** `POST /v1/vaults/{vault_id}/credentials`. */
export const credentialCreateSchema = z.strictObject({
  auth: credentialAuthSchema,
  name: z.string().min(1).max(256),
  metadata: metadataSchema.nullish(),
});

/** `POST /v1/vaults/{vault_id}/credentials/{credential_id}`. */
export const credentialUpdateSchema = z.strictObject({
  auth: credentialRotateSchema.optional(),
  metadata: metadataSchema.nullish(),
});
