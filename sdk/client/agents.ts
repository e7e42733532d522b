/**
 * `client.agents`: a thin typed pass-through to the agents group (`/v1/`), which speaks the
 * OpenAI Agents API. For the full typed surface, point the official `openai` client at the
 * server: `new OpenAI(client.agents.openaiOptions())` then `openai.beta.agents.*`.
 *
 * Every method takes the path ids first, in route order, then the JSON body (POST) or the
 * query (GET, DELETE), then {@linkcode CallOptions}. A sketch, not run as a test: it needs a
 * model server behind the agents group.
 *
 * ```ts ignore
 * const agent = await client.agents.create({ model: "gpt-5", name: "helper" });
 * const session = await client.agents.sessions.create({ agent_id: agent.id });
 * await client.agents.sessions.events.create(session.id, { events: [...] });
 * for await (const event of client.agents.sessions.events.stream(session.id)) { ... }
 * ```
 *
 * Method names follow the endpoint ids: `agents_sessions_turns_items_list` is
 * `agents.sessions.turns.items.list`, `agents_vaults_credentials_create` is
 * `agents.vaults.credentials.create`, `agents_responses_input_items_list` is
 * `agents.responses.inputItems.list`.
 *
 * @module
 */

import { ROUTES } from "./routes.ts";
import { textLines } from "./wire.ts";
import {
  type CallOptions,
  callRequest,
  type QueryValue,
  type ServerTransport,
} from "./transport.ts";

/**
 * One agents operation: path ids, then the body (POST) or query (GET, DELETE), then options.
 * Answers the JSON body; `content` operations answer bytes and `events.stream` yields events.
 */
// deno-lint-ignore no-explicit-any
export type AgentsMethod = <T = any>(...args: unknown[]) => Promise<T>;

/** CRUD operations shared by many resources. */
export interface AgentsCrud {
  /** POST the collection. */
  create: AgentsMethod;
  /** GET one. */
  retrieve: AgentsMethod;
  /** POST one. */
  update: AgentsMethod;
  /** GET the collection. */
  list: AgentsMethod;
  /** DELETE one. */
  delete: AgentsMethod;
}

/** A resource with only `list`. */
export interface AgentsListOnly {
  /** GET the collection. */
  list: AgentsMethod;
}

/** Turns of a session or subagent. */
export interface AgentsTurns {
  /** `…/turns`. */
  list: AgentsMethod;
  /** `…/turns/:turn_id`. */
  retrieve: AgentsMethod;
  /** `…/turns/:turn_id/items`. */
  items: AgentsListOnly;
}

/** `agents.sessions.*`. */
export interface AgentsSessions extends AgentsCrud {
  /** Events of a session. */
  events: {
    /** POST events to a session. */
    create: AgentsMethod;
    /** The session's event stream (SSE), as parsed JSON events. */
    stream: <T = unknown>(...args: unknown[]) => AsyncGenerator<T>;
  };
  /** Items of the session. */
  items: AgentsListOnly;
  /** Turns of the session. */
  turns: AgentsTurns;
  /** Subagents of the session. */
  subagents: {
    /** List subagents. */
    list: AgentsMethod;
    /** One subagent. */
    retrieve: AgentsMethod;
    /** A subagent's items. */
    items: AgentsListOnly;
    /** A subagent's turns. */
    turns: AgentsTurns;
  };
  /** Traces of the session. */
  traces: AgentsListOnly;
  /** Artifacts of the session. */
  artifacts: {
    /** List artifacts. */
    list: AgentsMethod;
    /** One artifact. */
    retrieve: AgentsMethod;
    /** Delete one. */
    delete: AgentsMethod;
    /** An artifact's bytes. */
    content: AgentsMethod;
  };
}

/** `agents.environments.*`. */
export interface AgentsEnvironments {
  /** Create one. */
  create: AgentsMethod;
  /** One environment. */
  retrieve: AgentsMethod;
  /** List them. */
  list: AgentsMethod;
  /** Files of an environment. */
  files: {
    /** Add a file. */
    create: AgentsMethod;
    /** List files. */
    list: AgentsMethod;
  };
  /** Environment templates. */
  templates: AgentsCrud;
}

/** `agents.automations.*`. */
export interface AgentsAutomations extends AgentsCrud {
  /** Pause one. */
  pause: AgentsMethod;
  /** Resume one. */
  resume: AgentsMethod;
  /** Invocations of an automation. */
  invocations: {
    /** Invoke. */
    create: AgentsMethod;
    /** One invocation. */
    retrieve: AgentsMethod;
    /** List invocations. */
    list: AgentsMethod;
  };
}

/** `agents.vaults.*`. */
export interface AgentsVaults extends AgentsCrud {
  /** Credentials of a vault. */
  credentials: AgentsCrud;
}

/** `agents.responses.*`. */
export interface AgentsResponses {
  /** Create a response. */
  create: AgentsMethod;
  /** One response. */
  retrieve: AgentsMethod;
  /** Delete one. */
  delete: AgentsMethod;
  /** Cancel one. */
  cancel: AgentsMethod;
  /** Input items of a response. */
  inputItems: AgentsListOnly;
  /** Count input tokens. */
  inputTokens: {
    /** Count. */
    count: AgentsMethod;
  };
}

/** `agents.files.*` (the `/v1/files` resource, not the sandbox's files). */
export interface AgentsFiles {
  /** Upload a file. */
  create: AgentsMethod;
  /** List files. */
  list: AgentsMethod;
  /** One file's metadata. */
  retrieve: AgentsMethod;
  /** One file's bytes. */
  content: AgentsMethod;
  /** Delete one. */
  delete: AgentsMethod;
}

/** Options for the official `openai` client (`new OpenAI(options)`). */
export interface OpenAIClientOptions {
  /** `<server>/v1`. */
  baseURL: string;
  /** The server token (the OpenAI client sends it as `Authorization: Bearer`). */
  apiKey: string;
  /** The client's extra headers (a gateway's `X-Access-Token`). */
  defaultHeaders: Record<string, string>;
}

/** Multi-word segments of agents endpoint ids (`input_items` is one resource). */
const COMPOUND: ReadonlyMap<string, string> = new Map([
  ["input_items", "inputItems"],
  ["input_tokens", "inputTokens"],
]);

/**
 * The client method name of an agents endpoint id (`agents_sessions_events_create` →
 * `agents.sessions.events.create`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentsMethodName } from "./agents.ts";
 * assert.equal(
 *   agentsMethodName("agents_responses_input_items_list"),
 *   "agents.responses.inputItems.list",
 * );
 * ```
 */
export function agentsMethodName(id: string): string {
  let rest = id.replace(/^agents_/, "");
  for (const [from, to] of COMPOUND) rest = rest.replace(from, to);
  return `agents.${rest.split("_").join(".")}`;
}

/** The JSON `data` of each server-sent event, until `[DONE]` or the end of the body. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  let data: string[] = [];
  for await (const line of textLines(body)) {
    if (line.startsWith("data:")) {
      data.push(line.slice(5).replace(/^ /, ""));
    } else if (line === "" && data.length > 0) {
      const text = data.join("\n");
      data = [];
      if (text === "[DONE]") return;
      yield JSON.parse(text);
    }
  }
}

/**
 * The agents group as a pass-through: `agents.create`, `agents.sessions.*`,
 * `agents.environments.*`, `agents.automations.*`, `agents.vaults.*`, `agents.models.*`,
 * `agents.responses.*`, `agents.files.*`. See the module doc for the argument order.
 *
 * @example A sketch, not run as a test: it needs a model server behind the agents group.
 * ```ts ignore
 * import OpenAI from "openai";
 * const openai = new OpenAI(client.agents.openaiOptions());
 * const models = await client.agents.models.list();
 * ```
 */
export class AgentsApi implements AgentsCrud {
  /** Create an agent. */
  declare readonly create: AgentsMethod;
  /** One agent. */
  declare readonly retrieve: AgentsMethod;
  /** Update an agent. */
  declare readonly update: AgentsMethod;
  /** List agents. */
  declare readonly list: AgentsMethod;
  /** Delete an agent. */
  declare readonly delete: AgentsMethod;
  /** Sessions. */
  declare readonly sessions: AgentsSessions;
  /** Environments. */
  declare readonly environments: AgentsEnvironments;
  /** Automations. */
  declare readonly automations: AgentsAutomations;
  /** Vaults (at `/v1/vaults`). */
  declare readonly vaults: AgentsVaults;
  /** Models. */
  declare readonly models: {
    /** List models. */
    list: AgentsMethod;
    /** One model. */
    retrieve: AgentsMethod;
  };
  /** Responses. */
  declare readonly responses: AgentsResponses;
  /** Files of the `/v1/files` resource. */
  declare readonly files: AgentsFiles;

  readonly #t: ServerTransport;
  readonly #baseUrl: string;
  readonly #token: string | null;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport, token: string | null) {
    this.#t = transport;
    this.#baseUrl = transport.baseUrl;
    this.#token = token;
    for (const [id, route] of Object.entries(ROUTES)) {
      if (!id.startsWith("agents_")) continue;
      const path = agentsMethodName(id).split(".").slice(1);
      // deno-lint-ignore no-explicit-any no-this-alias
      let node: any = this;
      for (const part of path.slice(0, -1)) node = node[part] ??= {};
      const method = route.slice(0, route.indexOf(" "));
      const params = [...route.matchAll(/:([a-z_]+)/g)].map((m) => m[1]);
      node[path[path.length - 1]] = id === "agents_sessions_events_stream"
        ? (...args: unknown[]) => this.#stream(id, params, args)
        : (...args: unknown[]) => this.#call(id, method, params, args);
    }
  }

  /** Options for the official `openai` client pointed at this server's `/v1`. */
  openaiOptions(): OpenAIClientOptions {
    const headers: Record<string, string> = {};
    for (const [k, v] of this.#t.headers()) if (k !== "authorization") headers[k] = v;
    return { baseURL: `${this.#baseUrl}/v1`, apiKey: this.#token ?? "", defaultHeaders: headers };
  }

  #request(method: string, params: string[], args: unknown[]) {
    const values: Record<string, string> = {};
    params.forEach((name, i) => (values[name] = String(args[i])));
    const payload = args[params.length] as Record<string, unknown> | undefined;
    const options = (args[params.length + 1] ?? {}) as CallOptions;
    const isBody = method === "POST";
    return {
      ...callRequest(options),
      params: values,
      headers: { "openai-beta": "agents=v1" },
      ...(isBody ? { json: payload ?? {} } : {}),
      ...(!isBody && payload ? { query: payload as Record<string, QueryValue> } : {}),
    };
  }

  #call(id: string, method: string, params: string[], args: unknown[]): Promise<unknown> {
    const req = this.#request(method, params, args);
    return id.endsWith("_content") ? this.#t.bytes(id, req) : this.#t.json(id, req);
  }

  async *#stream(id: string, params: string[], args: unknown[]): AsyncGenerator<unknown> {
    const req = this.#request("GET", params, args);
    const { response, done } = await this.#t.open(id, { ...req, stream: true });
    try {
      if (response.body) yield* sseEvents(response.body);
    } finally {
      done();
    }
  }
}
