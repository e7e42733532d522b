/**
 * ServerClient against the real server: health, discover and fail-fast, check, withToken,
 * close, and the commands sub-API.
 */

import assert from "node:assert/strict";
import {
  CommandNotFoundError,
  ConnectionError,
  EndpointNotAvailableError,
  NotFoundError,
  PolicyDeniedError,
  RateLimitedError,
  ServerAPIError,
  ServerClient,
  ServerValidationError,
  ValidationError,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

const COMMANDS = `
export default function (commands) {
  commands.register("add", {
    description: "Add two numbers",
    args: { a: { type: "number", required: true }, b: { type: "number", required: true } },
  }, ({ a, b }) => a + b);
  commands.register("whoami", { description: "The caller" }, (_args, ctx) => ctx.identity);
}
`;

async function withCommandsFile<T>(fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-sdk-cmds-" });
  try {
    const file = `${dir}/commands.ts`;
    await Deno.writeTextFile(file, COMMANDS);
    return await fn(file);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A port nothing listens on: bind one, note it, close it. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("health is true for a live server and false, never throwing, for a closed port", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url);
  assert.equal(await client.health(), true); // no token needed
  await using dead = new ServerClient(`http://127.0.0.1:${closedPort()}`, { timeout: 2 });
  assert.equal(await dead.health(), false);
  await dead.close();
  assert.equal(await dead.health(), false);
});

Deno.test("an unreachable server raises ConnectionError", async () => {
  await using dead = new ServerClient(`http://127.0.0.1:${closedPort()}`, { token: "x" });
  await assert.rejects(dead.discover(), (e) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.code, "E6001");
    assert.match(e.message, /unreachable/);
    assert.ok(e.suggestion.length > 0);
    return true;
  });
});

Deno.test("discover caches capabilities and later calls fail fast without a request", async () => {
  await using server = await startTestServer({
    policy: { endpoints: { commands_run: false } },
  });
  const seen: string[] = [];
  const counting = (input: Request | URL | string, init?: RequestInit) => {
    seen.push(new URL(input instanceof Request ? input.url : input).pathname);
    return fetch(input, init);
  };
  await using client = new ServerClient(server.url, { token: server.token, fetch: counting });
  assert.equal(client.capabilities, null);
  // Before discovery, the refusal comes from the server.
  await assert.rejects(client.commands.run("add", { a: 1, b: 2 }), (e) => {
    assert.ok(e instanceof EndpointNotAvailableError);
    assert.equal(e.status, 404);
    assert.equal(e.rule, "policy:endpoints.commands_run");
    return true;
  });
  const caps = await client.discover();
  assert.equal(client.capabilities, caps);
  assert.equal(caps.can("commands_run"), false);
  assert.equal(caps.can("commands_list"), true);
  const before = seen.length;
  await assert.rejects(client.commands.run("add", { a: 1, b: 2 }), (e) => {
    assert.ok(e instanceof EndpointNotAvailableError);
    assert.equal(e.status, 0); // no request was made
    assert.equal(e.rule, "policy:endpoints.commands_run");
    assert.equal(e.endpoint, "commands_run");
    return true;
  });
  assert.equal(seen.length, before, "fail-fast made a request");
  client.forgetDiscovery();
  assert.equal(client.capabilities, null);
  await assert.rejects(client.commands.run("add", {}), EndpointNotAvailableError);
  assert.equal(seen.length, before + 1);
});

Deno.test("check asks the server for endpoint and path decisions", async () => {
  await using server = await startTestServer({ policy: { endpoints: { commands_run: false } } });
  await using client = new ServerClient(server.url, { token: server.token });
  const ok = await client.check("commands_list");
  assert.equal(ok.allowed, true);
  assert.equal(ok.code, null);
  const off = await client.check("commands_run");
  assert.deepEqual([off.allowed, off.code, off.rule], [
    false,
    "endpoint_disabled",
    "policy:endpoints.commands_run",
  ]);
  const unknown = await client.check("no_such_endpoint");
  assert.equal(unknown.code, "unknown_endpoint");
  const outside = await client.check("files_list", "/etc/passwd", "read");
  assert.equal(outside.allowed, false);
  assert.equal(outside.code, "path_not_allowed");
  const inside = await client.check("files_list", `${server.root}/a.txt`);
  assert.equal(inside.allowed, true);
  assert.equal(inside.path, `${server.root}/a.txt`);
  assert.equal(inside.operation, "read");
  const caps = await client.discover();
  const viaCaps = await caps.checkPath("files_mkdir", "/etc/x");
  assert.equal(viaCaps.operation, "write");
  assert.equal(viaCaps.allowed, false);
  await assert.rejects(client.check(42 as unknown as string), ServerValidationError);
});

Deno.test("withToken calls as another identity with its own scopes", async () => {
  const readerToken = "reader-token-0123456789";
  await withCommandsFile(async (commandsFile) => {
    await using server = await startTestServer({
      commandsFile,
      policy: {
        identities: [
          { id: "default", scopes: ["*"] },
          { id: "reader", token: readerToken, scopes: ["commands:read"] },
        ],
      },
    });
    await using admin = new ServerClient(server.url, { token: server.token });
    assert.equal(await admin.commands.run("whoami"), "default");
    const reader = admin.withToken(readerToken);
    assert.notEqual(reader, admin);
    assert.equal(reader.baseUrl, admin.baseUrl);
    const caps = await reader.discover();
    assert.equal(caps.identityId, "reader");
    assert.deepEqual(caps.scopes, ["commands:read"]);
    assert.equal(admin.capabilities, null, "the other identity's discovery is its own");
    assert.equal((await reader.commands.list()).length, 2);
    await assert.rejects(reader.commands.run("whoami"), (e) => {
      assert.ok(e instanceof PolicyDeniedError);
      assert.equal(e.scope, "commands:run");
      assert.equal(e.status, 0); // fail-fast from the cached capabilities
      return true;
    });
    reader.forgetDiscovery();
    await assert.rejects(reader.commands.run("whoami"), (e) => {
      assert.ok(e instanceof PolicyDeniedError);
      assert.equal(e.status, 403);
      assert.equal(e.serverCode, "missing_scope");
      assert.equal(e.scope, "commands:run");
      return true;
    });
    await reader.close();
  });
});

Deno.test("commands: list and run, unknown command, bad arguments", async () => {
  await withCommandsFile(async (commandsFile) => {
    await using server = await startTestServer({ commandsFile });
    await using client = new ServerClient(server.url, { token: server.token });
    const list = await client.commands.list();
    assert.deepEqual(list.map((c) => c.name), ["add", "whoami"]);
    const add = list[0];
    assert.equal(add.description, "Add two numbers");
    assert.deepEqual(add.args.a, { type: "number", required: true, description: null });
    assert.equal(await client.commands.run<number>("add", { a: 2, b: 40 }), 42);
    await assert.rejects(client.commands.run("nope"), (e) => {
      assert.ok(e instanceof CommandNotFoundError);
      assert.ok(e instanceof NotFoundError);
      assert.ok(e instanceof ServerAPIError);
      assert.equal(e.status, 404);
      assert.equal(e.code, "E9006");
      return true;
    });
    await assert.rejects(client.commands.run("add", { a: 1 }), (e) => {
      assert.ok(e instanceof ServerValidationError);
      assert.ok(e instanceof ValidationError);
      assert.equal(e.param, "b");
      return true;
    });
  });
});

Deno.test("close aborts and refuses later calls", async () => {
  await using server = await startTestServer();
  const client = new ServerClient(server.url, { token: server.token });
  assert.equal((await client.commands.list()).length, 0);
  await client.close();
  await assert.rejects(client.commands.list(), ConnectionError);
});

const BIG_BYTES = 64 * 1024 * 1024;

Deno.test("stopped streams close their HTTP bodies: the server's concurrency slot is freed", async () => {
  await using server = await startTestServer({
    policy: {
      endpoints: {
        files_watch: { limits: { concurrency: 1 } },
        shell_stream: { limits: { concurrency: 1 } },
        files_download: { limits: { concurrency: 1 } },
      },
    },
  });
  await using client = new ServerClient(server.url, { token: server.token });
  // More than loopback's socket buffers hold (~36 MiB here): the server cannot finish sending
  // it to a client that stopped reading, so only a closed body frees the slot.
  await Deno.writeFile(`${server.root}/big.bin`, new Uint8Array(BIG_BYTES));
  // Each endpoint admits one at a time: had a body stayed open, the next call would stay a 429.
  // The server frees a slot when it sees the connection go, a moment after the client stops.
  for (let round = 0; round < 3; round++) {
    // A watch stopped by its signal.
    const stop = new AbortController();
    await admitted(() =>
      client.files.watchFor(".", {
        timeout: 0,
        signal: stop.signal,
        onReady: () => stop.abort(),
      })
    );
    // A stream left by break.
    await admitted(async () => {
      for await (const _ of client.process.shellStream("echo x; sleep 30")) break;
    });
    // A download stream cancelled after the first chunk.
    const body = await admitted(() => client.files.downloadStream("big.bin"));
    const reader = body.getReader();
    await reader.read();
    await reader.cancel();
  }
  assert.equal((await admitted(() => client.files.download("big.bin"))).length, BIG_BYTES);
  assert.equal((await admitted(() => client.process.runStream("echo done"))).stdout, "done\n");
});

/** `call`, again while the server answers 429 for up to two seconds. */
async function admitted<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 2000;
  while (true) {
    try {
      return await call();
    } catch (e) {
      if (!(e instanceof RateLimitedError) || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

Deno.test("derivePtyUrl: port 9000 and gateway hosts map to the PTY port", async () => {
  const { derivePtyUrl } = await import("../../sdk/client/server_client.ts");
  assert.equal(derivePtyUrl("http://127.0.0.1:9000"), "ws://127.0.0.1:9001");
  assert.equal(derivePtyUrl("https://9000-sb1.example.com"), "wss://9001-sb1.example.com");
  assert.equal(derivePtyUrl("http://9000-sb1.localhost:4000"), "ws://9001-sb1.localhost:4000");
  assert.equal(derivePtyUrl("http://127.0.0.1:4321"), null);
  const client = new ServerClient("http://127.0.0.1:4321");
  assert.throws(() => client.pty.connectUrl("pty_1"), ValidationError);
});

Deno.test("agents.openaiOptions points the official openai client at the server's /v1", async () => {
  const { default: OpenAI, NotFoundError: OpenAINotFound } = await import("openai");
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const openai = new OpenAI({ ...client.agents.openaiOptions(), maxRetries: 0 });
  // No agents handlers yet: an authenticated 404 endpoint_disabled (a wrong key would be 401).
  await assert.rejects(openai.models.list(), (e) => {
    assert.ok(e instanceof OpenAINotFound);
    assert.equal((e as { code?: string }).code, "endpoint_disabled");
    return true;
  });
});

Deno.test("an answer cut short after its head is a ConnectionError that says so, not 'unreachable'", async () => {
  // What a server's answer looks like on the wire when the connection closes mid-body (a
  // download whose file shrank while the server read it ends this way): the head promises
  // 100 bytes, 10 come, the connection closes.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      const buf = new Uint8Array(64 * 1024);
      await conn.read(buf);
      await conn.write(new TextEncoder().encode(
        "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n" +
          "content-length: 100\r\n\r\n0123456789",
      ));
      conn.close();
    }
  })();
  const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  await using client = new ServerClient(url, { token: "x" });
  await assert.rejects(client.files.download("count"), (e) => {
    assert.ok(e instanceof ConnectionError, String(e));
    assert.match(
      e.message,
      /^files_download: the answer from http:\/\/127\.0\.0\.1:\d+ was cut short/,
    );
    assert.doesNotMatch(e.message, /unreachable/);
    assert.match(e.suggestion, /append/);
    return true;
  });
  listener.close();
  await serving.catch(() => {});
});
