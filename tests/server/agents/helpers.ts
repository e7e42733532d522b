/**
 * The agents tests' server: the real server (through the launcher, under narrowed permissions)
 * with the agents group on, a data directory of the test's own, and the official `openai`
 * client pointed at it.
 *
 * @module
 */

import OpenAI from "openai";
import { startTestServer, type TestServer, type TestServerOptions } from "../../helpers/server.ts";

/** A server with the agents group on, and a client for it. */
export interface AgentsTestServer extends TestServer {
  /** The official client, `baseURL: <server>/v1`. */
  client: OpenAI;
  /** The data directory. */
  dataDir: string;
}

/** Options beyond {@linkcode TestServerOptions}. */
export interface AgentsTestOptions extends TestServerOptions {
  /** Use this data directory (kept on close); default a new one, removed on close. */
  dataDir?: string;
}

/** Start a server with the agents group on. */
export async function startAgentsServer(
  options: AgentsTestOptions = {},
): Promise<AgentsTestServer> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "sandbar-test-data-" });
  const policy = options.policy ?? { endpoints: { agents: true } };
  const server = await startTestServer({
    ...options,
    policy,
    args: ["--data-dir", dataDir, ...(options.args ?? [])],
  });
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
  const close = async () => {
    await server.close();
    if (ownDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  };
  return { ...server, client, dataDir, close, [Symbol.asyncDispose]: close };
}

/** Whatever `fn` rejects with (fails the test when it resolves). */
export async function rejection(fn: () => Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await fn();
  } catch (e) {
    return e as Record<string, unknown>;
  }
  throw new Error("expected a rejection");
}

/** An environment as retrieved, with the `error` its setup may have ended in. */
export type EnvironmentInfo =
  & Awaited<ReturnType<OpenAI["beta"]["agents"]["environments"]["retrieve"]>>
  & { error?: { code: string; message: string } | null };

/** Poll an environment until its setup has ended (bounded; the setup runs in the background). */
export async function settled(client: OpenAI, id: string): Promise<EnvironmentInfo> {
  const deadline = Date.now() + 60_000;
  while (true) {
    const env = await client.beta.agents.environments.retrieve(id) as EnvironmentInfo;
    if (env.status !== "pending") return env;
    if (Date.now() > deadline) throw new Error(`environment ${id} still pending`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
