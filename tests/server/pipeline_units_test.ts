// The pipeline's pure steps, in process and without a network: the rate and concurrency
// limiters, the duplicate-parameter check, the body-limit stream and the router's matching
// (through Hono's `app.request`). The end-to-end order of the steps is in pipeline_test.ts.
import assert from "node:assert/strict";
import { Hono } from "hono";
import { ApiError } from "../../server/errors.ts";
import { limitStream } from "../../server/pipeline/body_limit.ts";
import {
  rejectDuplicateParameters,
  repeatedParameter,
} from "../../server/pipeline/duplicate_params.ts";
import { StaticFirstRouter } from "../../server/pipeline/match.ts";
import { ConcurrencyLimiter, RateLimiter } from "../../server/pipeline/rate_limits.ts";

Deno.test("rate limiter: a burst up to the limit passes, the next waits for one token", () => {
  const rl = new RateLimiter();
  for (let i = 0; i < 3; i++) assert.equal(rl.take("a/shell", 3, 0), 0, `call ${i}`);
  // 3 per minute is one token per 20 s; none is left at t=0.
  assert.equal(rl.take("a/shell", 3, 0), 20);
  // Half-way to the next token, half the wait is left.
  assert.equal(rl.take("a/shell", 3, 10_000), 10);
  assert.equal(rl.take("a/shell", 3, 20_000), 0);
  assert.equal(rl.take("a/shell", 3, 20_000), 20);
});

Deno.test("rate limiter: keys are separate and refilling stops at the limit", () => {
  const rl = new RateLimiter();
  assert.equal(rl.take("a", 1, 0), 0);
  assert.ok(rl.take("a", 1, 0) > 0);
  assert.equal(rl.take("b", 1, 0), 0, "another key has its own bucket");
  // An hour idle refills to 2 tokens, not 120.
  assert.equal(rl.take("c", 2, 0), 0);
  assert.equal(rl.take("c", 2, 3_600_000), 0);
  assert.equal(rl.take("c", 2, 3_600_000), 0);
  assert.ok(rl.take("c", 2, 3_600_000) > 0);
});

Deno.test("concurrency limiter: slots run out, come back on release, once each", () => {
  const cl = new ConcurrencyLimiter();
  const first = cl.acquire("a", 2);
  const second = cl.acquire("a", 2);
  assert.ok(first && second);
  assert.equal(cl.acquire("a", 2), undefined, "the third request is refused");
  assert.ok(cl.acquire("b", 2), "another key is not affected");
  first();
  first(); // a second release of the same slot frees nothing more
  const third = cl.acquire("a", 2);
  assert.ok(third);
  assert.equal(cl.acquire("a", 2), undefined);
  second();
  third();
  assert.ok(cl.acquire("a", 2) && cl.acquire("a", 2), "all slots are free again");
});

Deno.test("duplicate parameters: the first repeated key, brackets excepted", () => {
  assert.equal(repeatedParameter("?path=a&path=b"), "path");
  assert.equal(repeatedParameter("?a=1&b=2&b=3&a=4"), "b");
  assert.equal(repeatedParameter("?status[]=a&status[]=b"), undefined);
  assert.equal(repeatedParameter("?path=a&depth=2"), undefined);
  assert.equal(repeatedParameter("?"), undefined);
  assert.equal(repeatedParameter(""), undefined);
  // Encoded names are the same name.
  assert.equal(repeatedParameter("?pa%74h=a&path=b"), "path");
});

Deno.test("duplicate parameters: the step refuses with duplicate_parameter naming the key", () => {
  rejectDuplicateParameters("http://x/files?path=a");
  rejectDuplicateParameters("http://x/files");
  assert.throws(
    () => rejectDuplicateParameters("http://x/files?path=a&path=b"),
    (e: unknown) =>
      e instanceof ApiError && e.code === "duplicate_parameter" && e.status === 400 &&
      e.options.param === "path",
  );
});

Deno.test("body limit stream: passes up to the limit, errors past it", async () => {
  let exceeded: ApiError | undefined;
  const within = new Response("abc").body!.pipeThrough(limitStream(3, (e) => (exceeded = e)));
  assert.equal(await new Response(within).text(), "abc");
  assert.equal(exceeded, undefined);
  const over = new Response("abcd").body!.pipeThrough(limitStream(3, (e) => (exceeded = e)));
  await assert.rejects(new Response(over).text());
  const refusal = exceeded as ApiError | undefined;
  assert.equal(refusal?.code, "payload_too_large");
  assert.equal(refusal?.options.limit, 3);
});

function routedApp(): Hono {
  const app = new Hono({ router: new StaticFirstRouter() });
  const name = (id: string) => (c: { json: (v: unknown) => Response }) => c.json({ id });
  // Registered as the server does: fewer parameters first.
  app.get("/v1/agents/sessions", name("sessions_list"));
  app.get("/files", name("files_download"));
  app.post("/files", name("files_upload"));
  app.get("/files/list", name("files_list"));
  app.get("/v1/agents/:agent_id", (c) => c.json({ id: "agents_retrieve", ...c.req.param() }));
  app.get(
    "/v1/agents/sessions/:session_id/turns/:turn_id",
    (c) => c.json({ id: "turns_retrieve", ...c.req.param() }),
  );
  return app;
}

Deno.test("router: a static route wins over a parameter route that also matches", async () => {
  const app = routedApp();
  assert.deepEqual(await (await app.request("/v1/agents/sessions")).json(), {
    id: "sessions_list",
  });
  assert.deepEqual(await (await app.request("/v1/agents/agent_1")).json(), {
    id: "agents_retrieve",
    agent_id: "agent_1",
  });
});

Deno.test("router: parameters are captured, methods kept apart, others not found", async () => {
  const app = routedApp();
  assert.deepEqual(await (await app.request("/v1/agents/sessions/s1/turns/t2")).json(), {
    id: "turns_retrieve",
    session_id: "s1",
    turn_id: "t2",
  });
  assert.deepEqual(await (await app.request("/files", { method: "POST" })).json(), {
    id: "files_upload",
  });
  assert.deepEqual(await (await app.request("/files?path=a")).json(), { id: "files_download" });
  assert.deepEqual(await (await app.request("/files/list")).json(), { id: "files_list" });
  assert.equal((await app.request("/files/lis")).status, 404, "same length, other path");
  assert.equal((await app.request("/files/list/")).status, 404);
  assert.equal((await app.request("/files/list", { method: "DELETE" })).status, 404);
});
