/**
 * Vaults as the layers below the HTTP one use them: a credential's sealed secrets, opened for
 * the runtime (a session's `OPENAI_API_KEY`) and MCP (a server's token). The HTTP resources
 * (`resources/vaults.ts`) seal them; nothing here answers a request.
 *
 * @module
 */

import type { AgentsCore } from "../core.ts";
import type { StoredObject } from "../store.ts";

/** A credential's secrets by name (`access_token`, `refresh_token`, `client_secret`, …). */
export type CredentialSecrets = Record<string, string>;

/**
 * A credential's secrets, opened: for the runtime (a session's `OPENAI_API_KEY`, an MCP
 * server's token). Never for an answer.
 */
export async function openCredentialSecrets(
  core: Pick<AgentsCore, "box">,
  credential: StoredObject,
): Promise<CredentialSecrets> {
  return await core.box.open(credential.sealed!, credential.id) as CredentialSecrets;
}
