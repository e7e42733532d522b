/**
 * A small scripted OpenAI-compatible upstream on loopback: the only stand-in the agents tests
 * use, since no model is reachable here. It speaks the parts of the API the server passes
 * through (models, Responses with real SSE, cancel, delete, input token counts), checks the
 * upstream key, and records what it was sent.
 *
 * @module
 */

/** A running scripted upstream. */
export interface ScriptedUpstream {
  /** `http://127.0.0.1:port/v1`. */
  baseUrl: string;
  /** The key it expects. */
  apiKey: string;
  /** Requests received, in order: method, path, authorization header, body. */
  requests: { method: string; path: string; authorization: string | null; body: string }[];
  /** Set to hold a stream after its first delta until the promise resolves. */
  holdStream?: Promise<void>;
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
  const upstream: ScriptedUpstream = {
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
    if (req.method === "POST" && path === "/responses") {
      const params = JSON.parse(body);
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
