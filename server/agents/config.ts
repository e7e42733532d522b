/**
 * Where the agents group keeps its state and which upstream model provider it talks to, settled
 * once at start from the command line, the server's environment and the policy file.
 *
 * - Data directory: `--data-dir DIR`, else `SANDBAR_DATA_DIR`, else
 *   `$XDG_STATE_HOME/sandbar` (`~/.local/state/sandbar` without it): outside any workspace, so
 *   it survives a workspace being wiped and no file endpoint reaches it.
 * - Upstream: the policy's `agents.upstream {base_url, api_key_env}` when set, else
 *   `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and `OPENAI_API_KEY`.
 * - Store key: `SANDBAR_SECRET_KEY` when set, else a key file in the data directory.
 *
 * The values are read here and the variables are then removed from the server's environment by
 * the CLI, so no process the server starts can inherit them.
 *
 * @module
 */

import { isAbsolute, join, resolve } from "node:path";
import type { PolicyFile } from "../policy/schema.ts";

/** The upstream model provider, as the agents group calls it. */
export interface UpstreamConfig {
  /** Base URL ending before `/responses` or `/models`, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The API key sent as `Authorization: Bearer`, if any. */
  apiKey?: string;
  /**
   * Which API the runtime's turns speak: the Responses API (streaming), or Chat Completions,
   * which most self-hosted model servers offer. Default `responses`.
   */
  api?: "responses" | "chat_completions";
}

/** Everything the agents group is given at start. */
export interface AgentsConfig {
  /** Absolute path of the data directory. */
  dataDir: string;
  /** The upstream model provider. */
  upstream: UpstreamConfig;
  /** The secret the store key is derived from, when given by the environment. */
  secretKey?: string;
  /**
   * Where traces are exported over OTLP/HTTP JSON (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as
   * given, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`), if anywhere.
   */
  otlpTracesUrl?: string;
}

/** Variables that hold the agents group's secrets, by the policy (read once, then removed). */
export function agentsSecretVariables(policy: PolicyFile | undefined): string[] {
  const names = ["OPENAI_API_KEY", "SANDBAR_SECRET_KEY"];
  const own = policy?.agents?.upstream?.api_key_env;
  if (own) names.push(own);
  return names;
}

/**
 * The data directory from the flag, the environment, or the default.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveDataDir } from "./config.ts";
 * assert.equal(resolveDataDir("/srv/data", {}), "/srv/data");
 * assert.equal(resolveDataDir(undefined, { HOME: "/home/u" }), "/home/u/.local/state/sandbar");
 * ```
 */
export function resolveDataDir(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string {
  const chosen = flag ?? env.SANDBAR_DATA_DIR;
  if (chosen) return resolve(chosen);
  const xdg = env.XDG_STATE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "sandbar");
  return join(env.HOME ?? "/root", ".local/state/sandbar");
}

/**
 * The agents configuration from the data directory, the environment and the policy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentsConfig } from "./config.ts";
 * const c = agentsConfig("/d", { OPENAI_BASE_URL: "http://127.0.0.1:8080/v1/" }, undefined);
 * assert.equal(c.upstream.baseUrl, "http://127.0.0.1:8080/v1");
 * ```
 */
export function agentsConfig(
  dataDir: string,
  env: Readonly<Record<string, string | undefined>>,
  policy: PolicyFile | undefined,
): AgentsConfig {
  const fromPolicy = policy?.agents?.upstream;
  const baseUrl = (fromPolicy?.base_url ?? env.OPENAI_BASE_URL ?? "https://api.openai.com/v1")
    .replace(/\/+$/, "");
  const keyVariable = fromPolicy ? fromPolicy.api_key_env : "OPENAI_API_KEY";
  const apiKey = keyVariable ? env[keyVariable] || undefined : undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, "");
  return {
    dataDir,
    upstream: { baseUrl, apiKey, api: fromPolicy?.api ?? "responses" },
    secretKey: env.SANDBAR_SECRET_KEY || undefined,
    otlpTracesUrl: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ||
      (base ? `${base}/v1/traces` : undefined),
  };
}

/**
 * The hosts (for Deno's `--allow-net`, comma-separated) the group reaches: the upstream's, and
 * the OTLP collector's when traces are exported.
 */
export function upstreamHost(config: AgentsConfig): string | undefined {
  const hosts: string[] = [];
  for (const url of [config.upstream.baseUrl, config.otlpTracesUrl]) {
    if (!url) continue;
    try {
      hosts.push(new URL(url).host);
    } catch { /* not a URL: nothing to reach */ }
  }
  return hosts.length > 0 ? hosts.join(",") : undefined;
}
