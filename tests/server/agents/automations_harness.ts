/**
 * The automations tests' server: the real server (`startServer`, the code `sandbar` runs),
 * started in the test's process so that its automations can be timed by a fake clock
 * (`@sinonjs/fake-timers`' `createClock`, given through `automationClock`). Only the
 * scheduler reads that clock; HTTP, the store, the runtime and the scripted upstream run on
 * real time. Everything is driven through the official `openai` client.
 *
 * @module
 */

import FakeTimers from "@sinonjs/fake-timers";
import OpenAI from "openai";
import { type SandbarServer, startServer } from "../../../server/serve.ts";
import { eventually } from "../../helpers/wait.ts";
import { type ScriptedUpstream, startScriptedUpstream } from "./scripted_upstream.ts";

const TOKEN = "automations-test-token-0123456789";

/** A fake clock as `@sinonjs/fake-timers` makes it. */
export type FakeClock = ReturnType<typeof FakeTimers.createClock>;

/** A running server with its fake clock and a client. */
export interface AutomationsServer {
  /** The server. */
  server: SandbarServer;
  /** The official client. */
  client: OpenAI;
  /** The clock its scheduler reads. */
  clock: FakeClock;
  /** Move the clock to `iso` (an ISO instant after now), firing what falls due on the way. */
  moveTo(iso: string): void;
  /** Stop the server (its directories are kept). */
  close(): Promise<void>;
  /** For `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Directories a test keeps across restarts, and the upstream its sessions call. */
export interface AutomationsSetting {
  /** The server's root. */
  root: string;
  /** The data directory. */
  dataDir: string;
  /** The scripted upstream. */
  upstream: ScriptedUpstream;
  /** Start a server whose scheduler's clock starts at `iso`. */
  start(iso: string): Promise<AutomationsServer>;
  /** Remove everything. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Make the directories and the upstream; start servers with {@linkcode AutomationsSetting.start}. */
export async function automationsSetting(): Promise<AutomationsSetting> {
  const root = await Deno.makeTempDir({ prefix: "sandbar-automations-root-" });
  const dataDir = await Deno.makeTempDir({ prefix: "sandbar-automations-data-" });
  const upstream = startScriptedUpstream();
  return {
    root,
    dataDir,
    upstream,
    async start(iso) {
      const clock = FakeTimers.createClock(Date.parse(iso));
      const server = await startServer({
        port: 0,
        ptyPort: 0,
        root,
        dataDir,
        token: TOKEN,
        env: { OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: upstream.apiKey },
        audit: () => {},
        policy: { endpoints: { agents: true } },
        automationClock: {
          now: () => clock.now,
          setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
          clearTimeout: (handle) => clock.clearTimeout(handle as FakeTimers.TimerId),
        },
      });
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const close = () => server.close();
      return {
        server,
        client,
        clock,
        moveTo(to) {
          const ms = Date.parse(to) - clock.now;
          if (!(ms >= 0)) throw new Error(`cannot move the clock back to ${to}`);
          clock.tick(ms);
        },
        close,
        [Symbol.asyncDispose]: close,
      };
    },
    async [Symbol.asyncDispose]() {
      await upstream.close();
      await Deno.remove(root, { recursive: true }).catch(() => {});
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/** Every invocation of an automation, oldest first (through the client's auto-pagination). */
export async function invocationsOf(
  client: OpenAI,
  automationId: string,
): Promise<OpenAI.Beta.Agents.Automations.AutomationInvocation[]> {
  const out = [];
  for await (
    const inv of client.beta.agents.automations.invocations.list(automationId, {
      order: "asc",
      limit: 2,
    })
  ) out.push(inv);
  return out;
}

/** Wait until none of an automation's invocations is `queued`; returns them, oldest first. */
export function delivered(
  client: OpenAI,
  automationId: string,
  count: number,
): Promise<OpenAI.Beta.Agents.Automations.AutomationInvocation[]> {
  return eventually(`${count} invocations of ${automationId} are delivered`, async () => {
    const all = await invocationsOf(client, automationId);
    return all.length === count && all.every((i) => i.status !== "queued") ? all : undefined;
  });
}

/** Wait until a session's turns all ended; returns them, oldest first. */
export function turnsEnded(
  client: OpenAI,
  sessionId: string,
  count: number,
): Promise<OpenAI.Beta.Agents.Sessions.Turn[]> {
  return eventually(`${count} turns of ${sessionId} ended`, async () => {
    const turns = [];
    for await (const t of client.beta.agents.sessions.turns.list(sessionId, { order: "asc" })) {
      turns.push(t);
    }
    const ended = turns.every((t) => ["completed", "failed", "cancelled"].includes(t.status));
    const idle = (await client.beta.agents.sessions.retrieve(sessionId)).status === "idle";
    return turns.length === count && ended && idle ? turns : undefined;
  });
}

/** Unix seconds of an ISO instant, as the API's times are. */
export function seconds(iso: string): number {
  return Date.parse(iso) / 1000;
}

/** A new idle session with no environment, for automations to deliver into. */
export function bareSession(client: OpenAI): Promise<OpenAI.Beta.Agents.AgentSession> {
  return client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "gpt-test" },
  });
}

/** The schedule of a periodic automation and the instructions it sends. */
export interface PeriodicSchedule {
  /** The automation's name. */
  name: string;
  /** Its cron expression. */
  expression: string;
  /** Its IANA time zone. */
  timezone: string;
  /** What each firing sends into the session. */
  instructions: string;
}

/** A {@linkcode bareSession} and a periodic automation whose firings go into it. */
export async function periodicIntoSession(
  client: OpenAI,
  schedule: PeriodicSchedule,
): Promise<{
  session: OpenAI.Beta.Agents.AgentSession;
  automation: OpenAI.Beta.Agents.Automations.Automation;
}> {
  const session = await bareSession(client);
  const { instructions, ...when } = schedule;
  const automation = await client.beta.agents.automations.create({
    type: "periodic",
    ...when,
    target: { type: "existing_session", session_id: session.id, instructions },
  });
  return { session, automation };
}

/** A user message with one text part. */
export function text(t: string) {
  return { role: "user" as const, content: [{ type: "input_text" as const, text: t }] };
}
