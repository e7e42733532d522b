/**
 * `/v1/responses`: the Responses API passed through to the upstream model provider. Code in
 * the sandbox reaches the model with the sandbox's token at `<server>/v1/responses`, while the
 * provider's key stays in the server. A streamed response is forwarded event by event as the
 * upstream sends it; the finished response is kept in the store (unless `store: false`) with
 * its input items, for `retrieve`, `input_items` and `delete`.
 *
 * @module
 */

import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import type { ServerEnv } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import { unixNow } from "../ids.ts";
import { idempotentCreate, json } from "../idempotency.ts";
import { listPage, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery, readJson } from "../v1_request_reader.ts";
import { inputTokensSchema, responseCreateSchema } from "../schemas/responses.ts";
import { type AgentsService, agentsService } from "../service.ts";
import { tenantOf } from "../tenants.ts";
import type { StoredObject } from "../store.ts";
import { callUpstream } from "../upstream.ts";
import { conversationId, dropClaim, useConversation } from "../domain/conversations.ts";
import type { Tenant } from "../tenants.ts";
import type { z } from "zod";

type CreateBody = z.output<typeof responseCreateSchema>;

const TERMINAL_EVENTS = new Set([
  "response.completed",
  "response.failed",
  "response.incomplete",
  "response.cancelled",
]);

function randomHex(bytes: number): string {
  let hex = "";
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) {
    hex += b.toString(16).padStart(2, "0");
  }
  return hex;
}

/** The request's input as Responses input items, each with an id. */
function inputItems(input: CreateBody["input"]): Record<string, unknown>[] {
  if (input === undefined) return [];
  if (typeof input === "string") {
    return [{
      id: `msg_${randomHex(24)}`,
      type: "message",
      role: "user",
      status: "completed",
      content: [{ type: "input_text", text: input }],
    }];
  }
  return input.map((item) => {
    const out: Record<string, unknown> = { ...item };
    out.type ??= "message";
    if (out.type === "message" && typeof out.content === "string") {
      out.content = [{ type: "input_text", text: out.content }];
    }
    out.id ??= `msg_${randomHex(24)}`;
    return out;
  });
}

/**
 * Keep a finished response and its input items as `owner`'s, replacing an earlier copy of
 * `owner`'s (another owner's copy under the same id is left alone).
 */
function keep(
  service: AgentsService,
  owner: string,
  response: Record<string, unknown>,
  items: Record<string, unknown>[],
): void {
  const id = response.id;
  if (typeof id !== "string" || id === "") return;
  const { store } = service;
  store.transaction(() => {
    const now = unixNow();
    const earlier = store.get("response", id);
    if (earlier) {
      if (earlier.owner === owner) store.update(id, response);
      return;
    }
    store.insert("response", id, "", now, response, null, owner);
    for (const item of items) {
      store.insert("response_input_item", `${id}/${item.id}`, id, now, item, null);
    }
  });
}

/** Forward an SSE body as it arrives, and keep the final response when it comes. */
function relay(
  body: ReadableStream<Uint8Array>,
  onFinal: (response: Record<string, unknown>) => void,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let buffer = "";
  const scan = (text: string) => {
    buffer += text;
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (data === "" || data === "[DONE]") continue;
      try {
        const event = JSON.parse(data);
        if (TERMINAL_EVENTS.has(event?.type) && event.response) onFinal(event.response);
      } catch { /* not ours to judge: passed on as sent */ }
    }
  };
  return body.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        // Scanned first, so the response is stored before the client sees it end.
        scan(decoder.decode(chunk, { stream: true }));
        controller.enqueue(chunk);
      },
    }),
  );
}

/** Send a create request's body on to the upstream's `POST /responses`, unchanged. */
function postResponses(service: AgentsService, text: string, signal: AbortSignal) {
  return callUpstream(service.config.upstream, "POST", "/responses", text, signal);
}

/**
 * What a request continues must be the caller's: a `previous_response_id` it may see (every
 * response made here is kept), and a `conversation` it owns or is the first to use
 * (`domain/conversations.ts`), so no identity can have another's conversation continued for it.
 * Returns the conversation id this request claimed (to drop should the upstream refuse it).
 */
function checkContinued(
  service: AgentsService,
  tenant: Tenant,
  value: { previous_response_id?: unknown; conversation?: unknown },
): string | undefined {
  const previous = value.previous_response_id;
  if (
    typeof previous === "string" &&
    !service.store.get("response", previous, "", tenant.sees)
  ) {
    throw notFound("response", previous, "previous_response_id");
  }
  const conversation = conversationId(value.conversation);
  if (conversation === undefined) return undefined;
  return useConversation(service.store, tenant, conversation) ? conversation : undefined;
}

/**
 * The upstream refused a request: drop the claim of a conversation the request made. When the
 * refusal is the upstream's 404 for that conversation (an id it does not know), answer the 404
 * of a missing resource instead, the very answer another identity's conversation gets: so no
 * answer tells an id that exists and is another's from one that does not exist.
 */
async function refused(
  service: AgentsService,
  claimed: string | undefined,
  answer: Response,
): Promise<Response> {
  if (claimed === undefined) return answer;
  dropClaim(service.store, claimed);
  if (answer.status === 404 && (await answer.clone().text()).includes(claimed)) {
    throw notFound("conversation", claimed, "conversation");
  }
  return answer;
}

async function create(c: Context<ServerEnv>): Promise<Response> {
  const service = agentsService(c.var.state);
  const tenant = tenantOf(c);
  const owner = tenant.id;
  const { value, text } = await readJson(c, responseCreateSchema);
  const claimed = checkContinued(service, tenant, value);
  const stored = value.store !== false;
  const items = stored ? inputItems(value.input) : [];
  if (value.stream) {
    // A stream cannot be replayed: an Idempotency-Key is refused here rather than ignored.
    if (c.req.header("idempotency-key") !== undefined) {
      throw invalid("Idempotency-Key", "Idempotency-Key is not supported with stream: true.");
    }
    const result = await postResponses(service, text, c.req.raw.signal);
    if (!result.ok) return await refused(service, claimed, result.answer);
    const upstream = result.response;
    if (!upstream.body) return invalidUpstream("an empty stream");
    const body = relay(upstream.body, (final) => {
      if (stored) keep(service, owner, final, items);
    });
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": upstream.headers.get("content-type") ?? "text/event-stream",
        "cache-control": "no-cache",
      },
    });
  }
  return idempotentCreate(c, service.store, text, async (commit) => {
    const result = await postResponses(service, text, c.req.raw.signal);
    if (!result.ok) return await refused(service, claimed, result.answer);
    const response = await result.response.json().catch(() => undefined);
    if (!response || typeof response !== "object") {
      return invalidUpstream("a body that is not a JSON object");
    }
    const answer = { status: 200, body: response };
    await commit.soon(answer, () => {
      if (stored) keep(service, owner, response, items);
    });
    return answer;
  });
}

function invalidUpstream(what: string): Response {
  return new Response(
    JSON.stringify({
      error: {
        message: `The upstream model provider answered with ${what}`,
        type: "server_error",
        param: null,
        code: "upstream_error",
      },
    }),
    { status: 502, headers: { "content-type": "application/json" } },
  );
}

function storedResponse(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("response_id")!;
  const found = store.get("response", id, "", tenantOf(c).sees);
  if (!found) throw notFound("response", id, "response_id");
  return found;
}

/** The responses handlers. */
export const responsesResourceHandlers: HandlerMap<AgentsId> = {
  agents_responses_create: create,
  agents_responses_retrieve: (c) => {
    const q = parseQuery(new URL(c.req.url).search, [
      "include",
      "include_obfuscation",
      "starting_after",
      "stream",
    ]);
    if (q.plain.get("stream") === "true") {
      throw invalid(
        "stream",
        "Invalid 'stream': a stored response is retrieved whole; stream is not supported here.",
      );
    }
    return json({ status: 200, body: storedResponse(c).body });
  },
  agents_responses_delete: async (c) => {
    const service = agentsService(c.var.state);
    const found = storedResponse(c);
    service.store.delete(found.id);
    // The upstream may keep its own copy; ask it to drop it too, whatever it answers.
    const result = await callUpstream(
      service.config.upstream,
      "DELETE",
      `/responses/${encodeURIComponent(found.id)}`,
    );
    if (result.ok) await result.response.body?.cancel();
    return json({ status: 200, body: { id: found.id, object: "response.deleted", deleted: true } });
  },
  agents_responses_cancel: async (c) => {
    const service = agentsService(c.var.state);
    const found = storedResponse(c);
    const result = await callUpstream(
      service.config.upstream,
      "POST",
      `/responses/${encodeURIComponent(found.id)}/cancel`,
    );
    if (!result.ok) return result.answer;
    const response = await result.response.json();
    keep(service, found.owner, response, []);
    return json({ status: 200, body: response });
  },
  agents_responses_input_items_list: (c) => {
    const service = agentsService(c.var.state);
    const found = storedResponse(c);
    const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "include"]);
    const page = pageRequest(q);
    // Items are stored under `<response>/<item>`; the cursor and the answer use the item's id.
    const cursor = page.after === undefined ? undefined : `${found.id}/${page.after}`;
    const list = listPage(
      service.store,
      "response_input_item",
      found.id,
      { ...page, after: cursor },
      (o) => o.body as { id: string },
    );
    return json({ status: 200, body: list });
  },
  agents_responses_input_tokens_count: async (c) => {
    const service = agentsService(c.var.state);
    const { value, text } = await readJson(c, inputTokensSchema);
    // Counting another's conversation's tokens is reading it: the same checks as a create.
    const claimed = checkContinued(service, tenantOf(c), value);
    const result = await callUpstream(
      service.config.upstream,
      "POST",
      "/responses/input_tokens",
      text,
    );
    if (!result.ok) return await refused(service, claimed, result.answer);
    return json({ status: 200, body: await result.response.json() });
  },
};
