/**
 * A small scripted OpenAI-compatible upstream on loopback: the only stand-in the agents tests
 * use, since no model is reachable here. It speaks the parts of the API the server passes
 * through (models, Responses with real SSE, cancel, delete, input token counts), checks the
 * upstream key, and records what it was sent.
 *
 * @module
 */

/** One output item of a scripted model answer. */
export type ScriptedOutput =
  | { type: "message"; text: string }
  | { type: "function_call"; name: string; arguments: unknown; call_id?: string };

/**
 * One scripted model answer, given to the next streamed `/responses` or `/chat/completions`
 * request (in the order they come). `gate`, when set, holds the stream after its first event
 * until it resolves (the test then acts mid-answer); `reasoning` adds a reasoning summary.
 */
export interface ScriptedStep {
  /** What the model answers, in order; a function makes it from the request. */
  output: ScriptedOutput[] | ((request: Record<string, unknown>) => ScriptedOutput[]);
  /** Hold the stream after its first event until this resolves. */
  gate?: Promise<void>;
  /** A reasoning summary before the output. */
  reasoning?: string;
  /**
   * Take this step only for a request this accepts (by its instructions or input): concurrent
   * callers, such as subagents, are then answered by what they asked, not by arrival order.
   * A step without it answers any request.
   */
  match?: (request: Record<string, unknown>) => boolean;
}

/** The first step of `script` for `request`, taken out of it. */
function takeStep(
  script: ScriptedStep[],
  request: Record<string, unknown>,
): (ScriptedStep & { output: ScriptedOutput[] }) | undefined {
  const i = script.findIndex((s) => !s.match || s.match(request));
  if (i === -1) return undefined;
  const step = script.splice(i, 1)[0];
  const output = typeof step.output === "function" ? step.output(request) : step.output;
  return { ...step, output };
}

/** A running scripted upstream. */
export interface ScriptedUpstream {
  /** Answers for the next streamed model calls, taken in order. */
  script: ScriptedStep[];
  /** Resolves with the parsed body of the `n`th (1-based) model call once it has arrived. */
  modelCall(n: number): Promise<Record<string, unknown>>;
  /** `http://127.0.0.1:port/v1`. */
  baseUrl: string;
  /** The key it expects. */
  apiKey: string;
  /** Requests received, in order: method, path, authorization header, body. */
  requests: { method: string; path: string; authorization: string | null; body: string }[];
  /** Set to hold a stream after its first delta until the promise resolves. */
  holdStream?: Promise<void>;
  /**
   * The conversations that exist upstream, when set: a `/responses` or `input_tokens` request
   * naming another is answered 404, as the API answers an unknown conversation.
   */
  conversations?: Set<string>;
  /** Stop it. */
  close(): Promise<void>;
}

const encoder = new TextEncoder();

function responseObject(id: string, model: string, status: string, text: string) {
  return {
    id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output: status === "completed"
      ? [{
        type: "message",
        id: `msg_${id.slice(5)}`,
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text, annotations: [] }],
      }]
      : [],
    usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
  };
}

function sse(event: Record<string, unknown>): Uint8Array {
  return encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

/** Start the scripted upstream. */
export function startScriptedUpstream(apiKey = "sk-upstream-test-key-4c1d"): ScriptedUpstream {
  let n = 0;
  const calls: Record<string, unknown>[] = [];
  const waiting = new Map<number, PromiseWithResolvers<Record<string, unknown>>>();
  const arrived = (body: Record<string, unknown>) => {
    calls.push(body);
    waiting.get(calls.length)?.resolve(body);
  };
  const upstream: ScriptedUpstream = {
    script: [],
    modelCall(n) {
      if (calls.length >= n) return Promise.resolve(calls[n - 1]);
      let w = waiting.get(n);
      if (!w) waiting.set(n, w = Promise.withResolvers());
      return w.promise;
    },
    baseUrl: "",
    apiKey,
    requests: [],
    close: () => Promise.resolve(),
  };
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const body = req.body ? await req.text() : "";
    const authorization = req.headers.get("authorization");
    upstream.requests.push({ method: req.method, path: url.pathname, authorization, body });
    if (authorization !== `Bearer ${apiKey}`) {
      return json({
        error: {
          message: "Incorrect API key",
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      }, 401);
    }
    const path = url.pathname.replace(/^\/v1/, "");
    if (req.method === "GET" && path === "/models") {
      return json({
        object: "list",
        data: [
          { id: "gpt-test", object: "model", created: 1700000000, owned_by: "scripted" },
          { id: "gpt-other", object: "model", created: 1700000001, owned_by: "scripted" },
        ],
      });
    }
    const named = req.method === "POST" && path.startsWith("/responses")
      ? conversationOf(JSON.parse(body || "{}"))
      : undefined;
    if (named !== undefined && upstream.conversations && !upstream.conversations.has(named)) {
      return json({
        error: {
          message: `Conversation with id '${named}' not found.`,
          type: "invalid_request_error",
          param: null,
          code: null,
        },
      }, 404);
    }
    if (req.method === "POST" && path === "/responses/input_tokens") {
      return json({ object: "response.input_tokens", input_tokens: Math.ceil(body.length / 4) });
    }
    const cancel = /^\/responses\/([^/]+)\/cancel$/.exec(path);
    if (req.method === "POST" && cancel) {
      return json(responseObject(cancel[1], "gpt-test", "cancelled", ""));
    }
    const one = /^\/responses\/([^/]+)$/.exec(path);
    if (req.method === "DELETE" && one) {
      return json({ id: one[1], object: "response.deleted", deleted: true });
    }
    if (req.method === "POST" && path === "/chat/completions") {
      const params = JSON.parse(body);
      arrived(params);
      const step = takeStep(upstream.script, params) ??
        { output: [{ type: "message", text: "Hello" }] };
      return sseResponse(chatEvents(step, ++n), step.gate, true);
    }
    const params = req.method === "POST" && path === "/responses" ? JSON.parse(body) : undefined;
    const step = params?.stream ? takeStep(upstream.script, params) : undefined;
    if (step) {
      arrived(params);
      return sseResponse(responsesEvents(step, params.model, ++n), step.gate, false);
    }
    if (params) {
      if (params.stream) arrived(params);
      if (params.model !== "gpt-test") {
        return json({
          error: {
            message: `The model '${params.model}' does not exist`,
            type: "invalid_request_error",
            param: "model",
            code: "model_not_found",
          },
        }, 404);
      }
      const id = `resp_scripted${++n}`;
      if (!params.stream) {
        return json(
          responseObject(
            id,
            params.model,
            params.background ? "in_progress" : "completed",
            "Hello",
          ),
        );
      }
      const hold = upstream.holdStream;
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          let seq = 0;
          const created = responseObject(id, params.model, "in_progress", "");
          controller.enqueue(
            sse({ type: "response.created", sequence_number: seq++, response: created }),
          );
          controller.enqueue(sse({
            type: "response.output_text.delta",
            sequence_number: seq++,
            item_id: `msg_${n}`,
            output_index: 0,
            content_index: 0,
            delta: "Hel",
            logprobs: [],
          }));
          if (hold) await hold;
          controller.enqueue(sse({
            type: "response.output_text.delta",
            sequence_number: seq++,
            item_id: `msg_${n}`,
            output_index: 0,
            content_index: 0,
            delta: "lo",
            logprobs: [],
          }));
          controller.enqueue(sse({
            type: "response.completed",
            sequence_number: seq++,
            response: responseObject(id, params.model, "completed", "Hello"),
          }));
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    }
    return json({
      error: {
        message: `no route ${path}`,
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    }, 404);
  });
  upstream.baseUrl = `http://127.0.0.1:${server.addr.port}/v1`;
  upstream.close = async () => {
    await server.shutdown();
  };
  return upstream;
}

/** The conversation id a request body names, as the API takes it (a string or `{id}`). */
function conversationOf(params: Record<string, unknown>): string | undefined {
  const c = params.conversation as unknown;
  if (typeof c === "string") return c;
  if (c && typeof c === "object" && typeof (c as { id?: unknown }).id === "string") {
    return (c as { id: string }).id;
  }
  return undefined;
}

const USAGE = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

function callId(o: { call_id?: string }, n: number, i: number): string {
  return o.call_id ?? `call_${n}_${i}`;
}

function argumentsText(a: unknown): string {
  return typeof a === "string" ? a : JSON.stringify(a);
}

/** A scripted answer as Responses API stream events. */
function responsesEvents(
  step: ScriptedStep & { output: ScriptedOutput[] },
  model: string,
  n: number,
): unknown[] {
  const id = `resp_scripted${n}`;
  const events: Record<string, unknown>[] = [];
  const output: Record<string, unknown>[] = [];
  events.push({ type: "response.created", response: responseObject(id, model, "in_progress", "") });
  let index = 0;
  if (step.reasoning) {
    const item = { type: "reasoning", id: `rs_${n}`, summary: [] as unknown[] };
    events.push({ type: "response.output_item.added", output_index: index, item });
    events.push({
      type: "response.reasoning_summary_text.delta",
      item_id: item.id,
      output_index: index,
      summary_index: 0,
      delta: step.reasoning,
    });
    const done = { ...item, summary: [{ type: "summary_text", text: step.reasoning }] };
    events.push({ type: "response.output_item.done", output_index: index, item: done });
    output.push(done);
    index++;
  }
  for (const [i, o] of step.output.entries()) {
    if (o.type === "message") {
      const itemId = `msg_${n}_${i}`;
      const item = {
        type: "message",
        id: itemId,
        role: "assistant",
        status: "in_progress",
        content: [],
      };
      events.push({ type: "response.output_item.added", output_index: index, item });
      const half = Math.ceil(o.text.length / 2);
      for (const delta of [o.text.slice(0, half), o.text.slice(half)]) {
        if (delta === "") continue;
        events.push({
          type: "response.output_text.delta",
          item_id: itemId,
          output_index: index,
          content_index: 0,
          delta,
          logprobs: [],
        });
      }
      events.push({
        type: "response.output_text.done",
        item_id: itemId,
        output_index: index,
        content_index: 0,
        text: o.text,
      });
      const done = {
        ...item,
        status: "completed",
        content: [{ type: "output_text", text: o.text, annotations: [] }],
      };
      events.push({ type: "response.output_item.done", output_index: index, item: done });
      output.push(done);
    } else {
      const item = {
        type: "function_call",
        id: `fc_${n}_${i}`,
        call_id: callId(o, n, i),
        name: o.name,
        arguments: argumentsText(o.arguments),
        status: "completed",
      };
      events.push({ type: "response.output_item.added", output_index: index, item });
      events.push({ type: "response.output_item.done", output_index: index, item });
      output.push(item);
    }
    index++;
  }
  events.push({
    type: "response.completed",
    response: { ...responseObject(id, model, "completed", ""), output, usage: USAGE },
  });
  return events.map((e, seq) => ({ ...e, sequence_number: seq }));
}

/** A scripted answer as Chat Completions chunks. */
function chatEvents(step: ScriptedStep & { output: ScriptedOutput[] }, n: number): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: `chatcmpl-${n}`,
    object: "chat.completion.chunk",
    created: 1700000000,
    model: "gpt-test",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events: unknown[] = [chunk({ role: "assistant", content: "" })];
  let tool = 0;
  for (const [i, o] of step.output.entries()) {
    if (o.type === "message") {
      const half = Math.ceil(o.text.length / 2);
      events.push(chunk({ content: o.text.slice(0, half) }));
      events.push(chunk({ content: o.text.slice(half) }));
    } else {
      const args = argumentsText(o.arguments);
      const cut = Math.ceil(args.length / 2);
      events.push(chunk({
        tool_calls: [{
          index: tool,
          id: callId(o, n, i),
          type: "function",
          function: { name: o.name, arguments: args.slice(0, cut) },
        }],
      }));
      events.push(
        chunk({ tool_calls: [{ index: tool, function: { arguments: args.slice(cut) } }] }),
      );
      tool++;
    }
  }
  events.push(chunk({}, tool > 0 ? "tool_calls" : "stop"));
  events.push({
    id: `chatcmpl-${n}`,
    object: "chat.completion.chunk",
    created: 1700000000,
    model: "gpt-test",
    choices: [],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
  return events;
}

/** Events as an SSE response, held after the first one while `gate` is pending. */
function sseResponse(events: unknown[], gate: Promise<void> | undefined, done: boolean): Response {
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const [i, e] of events.entries()) {
        const type = (e as { type?: string }).type;
        const text = type
          ? `event: ${type}\ndata: ${JSON.stringify(e)}\n\n`
          : `data: ${JSON.stringify(e)}\n\n`;
        controller.enqueue(encoder.encode(text));
        if (i === 0 && gate) await gate;
      }
      if (done) controller.enqueue(encoder.encode("data: [DONE]\n\n"));
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}
