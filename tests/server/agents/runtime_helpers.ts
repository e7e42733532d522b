/**
 * The runtime tests' setting: a scripted upstream, a server with the agents group on that
 * calls it, an environment (a workspace in the server's root), and a session in it.
 *
 * @module
 */

import type OpenAI from "openai";
import { type AgentsTestOptions, type AgentsTestServer, startAgentsServer } from "./helpers.ts";
import {
  type ScriptedStep,
  type ScriptedUpstream,
  startScriptedUpstream,
} from "./scripted_upstream.ts";

/** A function tool the client answers: the weather in a city. */
export const WEATHER_TOOL = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
} as const;

/**
 * A model step that calls `apply_patch` to turn the session's seeded `notes.txt` ("hello\n")
 * into "hello world\n".
 */
export const PATCH_NOTES_STEP: ScriptedStep = {
  output: [{
    type: "function_call",
    name: "apply_patch",
    arguments: {
      input: "*** Begin Patch\n*** Update File: notes.txt\n@@\n-hello\n+hello world\n*** End Patch",
    },
  }],
};

/** A server, its upstream, and helpers. */
export interface RuntimeSetup {
  /** The scripted upstream. */
  upstream: ScriptedUpstream;
  /** The server. */
  server: AgentsTestServer;
  /** The official client. */
  client: OpenAI;
  /** Make an environment and a session in it; returns ids and the workspace path. */
  session(
    agent?: Record<string, unknown>,
  ): Promise<{ sessionId: string; environmentId: string; workspace: string }>;
  /** Stop both. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start the upstream and a server calling it. */
export async function runtimeSetup(
  options: AgentsTestOptions & { upstreamApi?: "responses" | "chat_completions" } = {},
): Promise<RuntimeSetup> {
  const upstream = startScriptedUpstream();
  const policy = options.upstreamApi === "chat_completions"
    ? {
      endpoints: { agents: true },
      agents: {
        upstream: {
          base_url: upstream.baseUrl,
          api_key_env: "UPSTREAM_KEY",
          api: "chat_completions",
        },
      },
    }
    : options.policy;
  const server = await startAgentsServer({
    ...options,
    ...(policy ? { policy } : {}),
    env: {
      OPENAI_BASE_URL: upstream.baseUrl,
      OPENAI_API_KEY: upstream.apiKey,
      UPSTREAM_KEY: upstream.apiKey,
      ...options.env,
    },
  });
  const client = server.client;
  return {
    upstream,
    server,
    client,
    async session(agent = {}) {
      const env = await client.beta.agents.environments.create({
        environment: {
          type: "openai_hosted",
          files: [{ type: "inline", path: "/workspace/notes.txt", data: btoa("hello\n") }],
        },
      });
      const session = await client.beta.agents.sessions.create({
        environment: { type: "openai_hosted", environment_id: env.id },
        agent: { model: "gpt-test", instructions: "Be brief.", ...agent },
      });
      return {
        sessionId: session.id,
        environmentId: env.id,
        workspace: `${server.root}/agent-environments/${env.id}`,
      };
    },
    async [Symbol.asyncDispose]() {
      await server.close();
      await upstream.close();
    },
  };
}

/** Read an SSE response's events (JSON payloads with their ids) until `until` says stop. */
export async function readEvents(
  response: Response,
  until: (event: Record<string, unknown>) => boolean,
): Promise<{ id: string; event: Record<string, unknown> }[]> {
  const out: { id: string; event: Record<string, unknown> }[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return out;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (!data || !id) continue;
        const event = JSON.parse(data);
        out.push({ id, event });
        if (until(event)) return out;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
