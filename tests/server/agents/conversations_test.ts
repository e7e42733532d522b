/**
 * Upstream conversations are tenants' resources (`server/agents/domain/conversations.ts`): the
 * first identity to use a `conversation` id through the server owns it, and another identity's
 * `responses.create` or `input_tokens` naming it, in either spelling, streamed or not, is the 404
 * of any other's resource, and never reaches the upstream. Three identities, as in
 * `tenants_test.ts`: the operator (every scope), `low` and `other`. Driven with the official
 * `openai` client against the scripted upstream, judged by what the upstream was sent.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { rejection } from "./helpers.ts";
import { runtimeSetup } from "./runtime_helpers.ts";

const LOW = "low-token-0123456789abcdef";
const OTHER = "other-token-0123456789abcdef";

const POLICY = {
  endpoints: { agents: true },
  identities: [
    { id: "low", token: LOW, scopes: ["agents:read", "agents:write"] },
    { id: "other", token: OTHER, scopes: ["agents:read", "agents:write"] },
  ],
};

/** The bodies the upstream received that name `conversation`. */
function sentWith(requests: { body: string }[], conversation: string): number {
  return requests.filter((r) => r.body.includes(`"${conversation}"`)).length;
}

Deno.test("conversations: another identity's upstream conversation is a 404 and is never sent on", async () => {
  await using t = await runtimeSetup({ policy: POLICY });
  const { client, upstream, server } = t;
  const as = (apiKey: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
  const low = as(LOW);
  const other = as(OTHER);
  // The conversations made at the upstream (with its key); any other id is unknown there.
  upstream.conversations = new Set(["conv_operator1", "conv_low1", "conv_free"]);

  // The operator uses a conversation first: it is the operator's from now on.
  const mine = await client.responses.create({
    model: "gpt-test",
    input: "hi",
    conversation: "conv_operator1",
  });
  assert.equal(sentWith(upstream.requests, "conv_operator1"), 1);

  // What any other's resource answers low: a response of the operator's.
  const theirs = await rejection(() => low.responses.retrieve(mine.id));
  assert.equal(theirs.status, 404);

  const before = upstream.requests.length;
  const attempts: [string, () => Promise<unknown>][] = [
    [
      "a string",
      () => low.responses.create({ model: "gpt-test", input: "x", conversation: "conv_operator1" }),
    ],
    ["an object", () =>
      low.responses.create({
        model: "gpt-test",
        input: "x",
        conversation: { id: "conv_operator1" },
      })],
    ["a stream", async () => {
      const stream = await low.responses.create({
        model: "gpt-test",
        input: "x",
        conversation: "conv_operator1",
        stream: true,
      });
      for await (const _ of stream) { /* drained */ }
    }],
    [
      "input_tokens",
      () => low.responses.inputTokens.count({ model: "gpt-test", conversation: "conv_operator1" }),
    ],
  ];
  for (const [how, attempt] of attempts) {
    const e = await rejection(attempt);
    assert.equal(e.status, 404, how);
    const error = e.error as Record<string, unknown>;
    const like = theirs.error as Record<string, unknown>;
    assert.equal(error.param, "conversation", how);
    assert.equal(error.message, "No conversation found with id 'conv_operator1'.", how);
    // The same envelope as another's response: type and code alike.
    assert.equal(error.type, like.type, how);
    assert.equal(error.code, like.code, how);
  }
  assert.equal(upstream.requests.length, before, "nothing of low's reached the upstream");

  // Another's conversation answers as one that exists nowhere (the upstream's 404 for an id it
  // does not know is answered as a missing resource too): byte for byte, the id aside.
  const raw = async (conversation: string) => {
    const res = await fetch(`${server.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${LOW}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", input: "x", conversation }),
    });
    const text = (await res.text()).replaceAll(conversation, "<id>");
    return { status: res.status, type: res.headers.get("content-type"), text };
  };
  assert.deepEqual(await raw("conv_nowhere1"), await raw("conv_operator1"));
  // Nor did low's try claim it: made at the upstream later, it is whoever uses it first.
  upstream.conversations.add("conv_nowhere1");
  await other.responses.create({ model: "gpt-test", input: "y", conversation: "conv_nowhere1" });

  // low's own: low uses one first; `other` is refused it, the operator may use it too, and low
  // keeps it.
  await low.responses.create({ model: "gpt-test", input: "a", conversation: "conv_low1" });
  const refused = await rejection(() =>
    other.responses.create({ model: "gpt-test", input: "b", conversation: { id: "conv_low1" } })
  );
  assert.equal(refused.status, 404);
  assert.equal((refused.error as Record<string, unknown>).param, "conversation");
  await client.responses.create({ model: "gpt-test", input: "c", conversation: "conv_low1" });
  await low.responses.create({ model: "gpt-test", input: "d", conversation: "conv_low1" });
  assert.equal(sentWith(upstream.requests, "conv_low1"), 3, "low, the operator, low again");

  // A request the upstream refuses claims nothing: the id is still free for the next one.
  const failed = await rejection(() =>
    low.responses.create({ model: "gpt-nope", input: "e", conversation: "conv_free" })
  );
  assert.equal(failed.status, 404);
  assert.equal((failed.error as Record<string, unknown>).code, "model_not_found");
  await other.responses.create({ model: "gpt-test", input: "f", conversation: "conv_free" });
  const late = await rejection(() =>
    low.responses.create({ model: "gpt-test", input: "g", conversation: "conv_free" })
  );
  assert.equal(late.status, 404, "the id went to the first use the upstream accepted");

  // The previous response of another's is refused on input_tokens too, not only on create.
  const counted = await rejection(() =>
    low.responses.inputTokens.count({ model: "gpt-test", previous_response_id: mine.id })
  );
  assert.equal(counted.status, 404);
  assert.equal((counted.error as Record<string, unknown>).param, "previous_response_id");
});
