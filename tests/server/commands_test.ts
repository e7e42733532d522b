// The commands group: the registry a template author uses, listed and run over real HTTP.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../helpers/server.ts";

const COMMANDS = fileURLToPath(new URL("./fixtures/commands.ts", import.meta.url));

Deno.test("named commands: list, run, unknown, bad arguments", async (t) => {
  await using server = await startTestServer({ commandsFile: COMMANDS });
  const post = (name: string, body?: string) =>
    server.fetch(`/commands/${name}`, { method: "POST", body });
  await t.step("GET /commands lists name, description and args", async () => {
    const { commands } = await (await server.fetch("/commands")).json();
    const greet = commands.find((c: { name: string }) => c.name === "greet");
    assert.deepEqual(greet, {
      name: "greet",
      description: "Say hello",
      args: { name: { type: "string", required: true }, times: { type: "integer" } },
    });
    assert.deepEqual(
      commands.map((c: { name: string }) => c.name),
      [...commands.map((c: { name: string }) => c.name)].sort(),
    );
  });
  await t.step("POST /commands/<name> returns the result value", async () => {
    const res = await post("greet", JSON.stringify({ name: "ada", times: 2 }));
    assert.equal(res.status, 200);
    assert.equal(await res.json(), "hello ada hello ada");
    const echo = await post("echo", JSON.stringify({ data: "ü ✓" }));
    assert.deepEqual(await echo.json(), { data: "ü ✓" });
    const empty = await post("echo");
    assert.deepEqual(await empty.json(), {});
  });
  await t.step("an unknown name is 404", async () => {
    const res = await post("nope", "{}");
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(body.code, "command_not_found");
    assert.equal(body.type, "CommandNotFoundError");
  });
  await t.step("bad arguments are 400 naming the argument", async () => {
    const cases: [string, string, RegExp][] = [
      ["{}", "name", /Missing argument "name"/],
      [JSON.stringify({ name: 5 }), "name", /"name" of greet must be string, got integer/],
      [JSON.stringify({ name: "a", times: 1.5 }), "times", /"times" .* must be integer/],
      [JSON.stringify({ name: "a", colour: "red" }), "colour", /Unknown argument "colour"/],
    ];
    for (const [body, param, message] of cases) {
      const res = await post("greet", body);
      assert.equal(res.status, 400, body);
      const err = await res.json();
      assert.equal(err.code, "invalid_arguments");
      assert.equal(err.param, param);
      assert.match(err.error, message);
    }
    for (const body of ["[1]", "not json", '"str"']) {
      const res = await post("greet", body);
      assert.equal(res.status, 400, body);
      const err = await res.json();
      assert.equal(err.code, "invalid_request");
      assert.equal(err.param, "body");
    }
  });
});

Deno.test("per-command scopes: missing_scope and scope_required", async (t) => {
  await using open = await startTestServer({
    commandsFile: COMMANDS,
    policy: {
      identities: [{ id: "runner", token: "runner-token-0123456789", scopes: ["commands:*"] }],
    },
  });
  await t.step("a command's own scope is required", async () => {
    const res = await open.fetch("/commands/db_write", {
      method: "POST",
      token: "runner-token-0123456789",
    });
    assert.equal(res.status, 403);
    const body = await res.json();
    assert.equal(body.code, "missing_scope");
    assert.equal(body.scope, "db:write");
    const admin = await open.fetch("/commands/db_write", { method: "POST" });
    assert.equal(await admin.json(), "written");
  });
  await t.step("a guarded command with no scope list is refused for everyone", async () => {
    const res = await open.fetch("/commands/deploy", { method: "POST" });
    assert.equal(res.status, 403);
    const body = await res.json();
    assert.equal(body.code, "scope_required");
    assert.match(body.error, /commands\.deploy\.scopes/);
  });
  await using guarded = await startTestServer({
    commandsFile: COMMANDS,
    policy: {
      commands: { deploy: { scopes: ["ops:deploy"] } },
      identities: [
        { id: "ops", token: "ops-token-0123456789abc", scopes: ["commands:run", "ops:deploy"] },
        { id: "dev", token: "dev-token-0123456789abc", scopes: ["commands:run"] },
      ],
    },
  });
  await t.step("the policy's scope list admits the identities that hold it", async () => {
    const ops = await guarded.fetch("/commands/deploy", {
      method: "POST",
      token: "ops-token-0123456789abc",
    });
    assert.equal(await ops.json(), "deployed");
    const dev = await guarded.fetch("/commands/deploy", {
      method: "POST",
      token: "dev-token-0123456789abc",
    });
    assert.equal(dev.status, 403);
    assert.equal((await dev.json()).code, "missing_scope");
  });
});
