/**
 * `POST /code/run`: code in live kernels (code contexts), and the operations on contexts.
 *
 * Python runs on ipykernel, JavaScript and TypeScript on Deno's Jupyter kernel (with every Deno
 * permission given up before the first run), bash in a persistent shell; all through the kernel
 * bridge of `server/code/`. A run without `context_id` uses the caller's default context of its
 * language and directory, so state persists there too. With `stream: true` the answer is NDJSON:
 * `stdout`, `stderr`, `result` and `error` lines as they happen, then one `end` line with the
 * whole result. The operations on contexts (`action`) keep the endpoint count: the contexts are
 * the `code:run` scope's, not the process endpoints'.
 *
 * @module
 */

import { z } from "zod";
import { ApiError } from "../../errors.ts";
import { codeContexts, type ContextRecord } from "../../code/contexts.ts";
import { allowedLanguage, type Language, runtimePrograms } from "../../code/languages.ts";
import { eventLine, RunCollector } from "../../code/run_result.ts";
import { commandRules, guardShellCommand } from "../../guards/commands/index.ts";
import { envRules, guardEnv } from "../../guards/env/index.ts";
import type { ServerState } from "../../state.ts";
import { readBody } from "../../request_reader.ts";
import { guardCwd, guardedEnvironment } from "../../process/start.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";

/** What `action` can ask for; `run` is the default. */
const ACTIONS = [
  "run",
  "create_context",
  "list_contexts",
  "restart_context",
  "remove_context",
] as const;

/** The body of `POST /code/run` (every action). Guarded fields are checked by their guards. */
export const RunCodeBody = z.strictObject({
  action: z.enum(ACTIONS).optional(),
  code: z.string().refine((s) => !s.includes("\0"), "code contains a NUL byte").optional(),
  language: z.string().max(32).optional(),
  context_id: z.string().regex(/^ctx_[0-9a-f]{12}$/, "not a context id (ctx_ and 12 hex digits)")
    .optional(),
  timeout: z.number().min(0).max(86400).optional(),
  env: z.unknown().optional(),
  cwd: z.unknown().optional(),
  stream: z.boolean().optional(),
});

type Body = z.output<typeof RunCodeBody>;

/** Default timeout of `run_code` in seconds (the SDK's `run_code` default). */
const DEFAULT_TIMEOUT = 30;

/** Keys each action accepts besides `action`. */
const KEYS: Readonly<Record<(typeof ACTIONS)[number], readonly string[]>> = {
  run: ["code", "language", "context_id", "timeout", "env", "cwd", "stream"],
  create_context: ["language", "env", "cwd"],
  list_contexts: [],
  restart_context: ["context_id"],
  remove_context: ["context_id"],
};

function refuse(param: string, message: string): never {
  throw new ApiError("invalid_arguments", message, { param });
}

function checkKeys(body: Body, action: (typeof ACTIONS)[number]): void {
  for (const key of Object.keys(body)) {
    if (key !== "action" && !KEYS[action].includes(key)) {
      refuse(
        key,
        `${key} is not an option of action ${action}; it takes ${
          KEYS[action].join(", ") || "nothing else"
        }`,
      );
    }
  }
  if (action.endsWith("_context") && action !== "create_context" && !body.context_id) {
    refuse("context_id", `context_id is required by action ${action}`);
  }
}

/**
 * The kernel bridge and the language's runtime are programs like any other: `allow_commands` must
 * admit them (the confinement executes only what the list admits, so the kernel would refuse
 * them anyway; this says so before anything starts).
 */
function admitRuntime(state: ServerState, language: Language): void {
  const rules = commandRules(state.policy);
  for (const program of runtimePrograms(language)) guardShellCommand(rules, program, "language");
}

/** `POST /code/run`. */
export const runCode: EndpointHandler = async (c) => {
  const state = c.var.state;
  const identity = c.var.identity.id;
  const body = await readBody(c, RunCodeBody);
  const action = body.action ?? "run";
  checkKeys(body, action);
  const contexts = codeContexts(state);
  switch (action) {
    case "create_context": {
      const language = allowedLanguage(state, body.language);
      admitRuntime(state, language);
      const env = guardedEnvironment(state, body.env);
      const cwd = await guardCwd(state, body.cwd);
      const envKeys = Object.keys((body.env ?? {}) as Record<string, unknown>);
      return c.json(await contexts.create(identity, { language, cwd, env, envKeys }), 201);
    }
    case "list_contexts":
      return c.json({ contexts: contexts.list(identity) });
    case "restart_context":
      return c.json(await contexts.restart(identity, body.context_id!));
    case "remove_context":
      await contexts.remove(identity, body.context_id!);
      return c.json({ removed: body.context_id });
  }
  if (body.code === undefined) refuse("code", "code is required");
  // Before a default context starts its kernel, so a refusal names the rule, not the kernel's.
  if (!body.context_id) admitRuntime(state, allowedLanguage(state, body.language));
  const context = await contextOf(state, identity, body);
  const language = context.language;
  admitRuntime(state, language);
  if (language === "bash") guardShellCommand(commandRules(state.policy), body.code, "code");
  const env = runEnv(state, language, body.env);
  const timeoutS = body.timeout ?? DEFAULT_TIMEOUT;
  const collector = new RunCollector();
  const run = (onEvent: (line: Record<string, unknown>) => void) =>
    contexts.run(identity, context.id, body.code!, { timeoutS, env }, (e) => {
      collector.add(e);
      if (!RunCollector.isStatus(e)) onEvent(eventLine(e));
    }).then((outcome) => collector.finish(language, context.id, outcome));
  if (!body.stream) return c.json(await run(() => {}));
  return streamed(context, run);
};

/** The context a run goes to: the one named, or the caller's default for language and cwd. */
async function contextOf(state: ServerState, identity: string, body: Body): Promise<ContextRecord> {
  const contexts = codeContexts(state);
  if (body.context_id) {
    const context = contexts.get(identity, body.context_id);
    if (body.cwd !== undefined) {
      refuse("cwd", "cwd is the context's own; give it when creating the context");
    }
    if (body.language !== undefined && allowedLanguage(state, body.language) !== context.language) {
      refuse("language", `context ${context.id} runs ${context.language}, not ${body.language}`);
    }
    allowedLanguage(state, context.language);
    return context;
  }
  const language = allowedLanguage(state, body.language);
  const cwd = await guardCwd(state, body.cwd);
  return await contexts.defaultContext(identity, {
    language,
    cwd,
    env: guardedEnvironment(state, {}),
  });
}

/** The variables of one run: set for the run only (python, bash), through the env guard. */
function runEnv(state: ServerState, language: Language, raw: unknown): Record<string, string> {
  const guarded = guardEnv(envRules(state.policy), raw);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(guarded)) if (v !== null) env[k] = v;
  if (Object.keys(env).length > 0 && (language === "javascript" || language === "typescript")) {
    refuse(
      "env",
      `${language} code runs without env permission, so a run's env would not reach it; ` +
        "give env when creating the context (it then reaches the kernel process only)",
    );
  }
  return env;
}

const encoder = new TextEncoder();

/** The NDJSON answer: each event as it happens, then the `end` line with the whole result. */
function streamed(
  context: ContextRecord,
  run: (onEvent: (line: Record<string, unknown>) => void) => Promise<Record<string, unknown>>,
): Response {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const send = (line: Record<string, unknown>) => {
    if (!open) return;
    try {
      controller.enqueue(encoder.encode(JSON.stringify(line) + "\n"));
    } catch {
      open = false;
    }
  };
  // The run goes on when the client leaves: the context keeps its state consistent.
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      open = false;
    },
  });
  run(send).then(
    (result) => send({ type: "end", ...result }),
    (e) => send({ type: "end", error: { name: "InternalError", value: String(e), traceback: [] } }),
  ).finally(() => {
    if (open) controller.close();
    open = false;
  });
  return new Response(stream, {
    headers: {
      "content-type": "application/x-ndjson",
      "x-context-id": context.id,
      "cache-control": "no-store",
    },
  });
}
