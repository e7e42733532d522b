/**
 * What a session's turn needs from the store besides the session itself: its environment
 * (workspace, variables, network) and the upstream it calls, where a vault credential of type
 * `environment_variable` named `OPENAI_API_KEY` in one of the session's vaults wins over the
 * server's own key, for that session only.
 *
 * @module
 */

import type { ServerState } from "../../state.ts";
import type { UpstreamConfig } from "../config.ts";
import { networkPrefix } from "../environments/network.ts";
import { workspaceDir } from "../environments/workspace.ts";
import { usesVenv, venvDir } from "../environments/python_venv.ts";
import { openCredentialSecrets } from "../domain/vaults.ts";
import type { EnvironmentSecrets } from "../domain/environments.ts";
import type { AgentsCore } from "../core.ts";
import type { SessionBody } from "./records.ts";
import type { ToolEnvironment } from "./tools/tool.ts";

/** The session's environment for tools, or null without one. */
export async function toolEnvironment(
  state: ServerState,
  service: AgentsCore,
  session: SessionBody,
): Promise<ToolEnvironment | null> {
  const id = session._internal.environment_id;
  if (!id) return null;
  // Only the session owner's: a session never uses another identity's environment.
  const stored = service.store.get("environment", id, "", session._internal.owner);
  if (!stored) return null;
  const secrets = stored.sealed
    ? await service.box.open(stored.sealed, id) as EnvironmentSecrets
    : { env: {}, steps: [] };
  const network = stored.body.network as
    | { access?: string; allowed_domains?: string[] }
    | undefined;
  const access = network?.access ?? "enabled";
  const workspace = workspaceDir(state, id);
  return {
    id,
    workspace,
    venv: usesVenv(secrets.steps) ? venvDir(workspace) : null,
    env: secrets.env,
    networkPrefix: await networkPrefix(
      access as "enabled" | "disabled" | "restricted",
      undefined,
      {
        state,
        owner: session._internal.owner,
        allowed: network?.allowed_domains ?? [],
        blocked: [],
      },
    ),
  };
}

/** The upstream of a session's turns. */
export async function sessionUpstream(
  service: AgentsCore,
  session: SessionBody,
): Promise<UpstreamConfig> {
  const base = service.config.upstream;
  for (const vaultId of session.vault_ids) {
    // Only the session owner's vaults: another identity's key never pays for its turns.
    if (!service.store.get("vault", vaultId, "", session._internal.owner)) continue;
    const rows = service.store.list("credential", vaultId, "asc", 100, undefined).rows;
    for (const row of rows) {
      const auth = row.body.auth as { type?: string; secret_name?: string } | undefined;
      if (auth?.type === "environment_variable" && auth.secret_name === "OPENAI_API_KEY") {
        const secrets = await openCredentialSecrets(service, row);
        if (typeof secrets.secret_value === "string") {
          return { ...base, apiKey: secrets.secret_value };
        }
      }
    }
  }
  return base;
}
