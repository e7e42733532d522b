// The policy engine: loading (all or nothing, with file:line:column), identities and tokens,
// and every rule prefix of the endpoint rule.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { ENDPOINTS } from "../../server/endpoints.ts";
import { compilePolicy } from "../../server/policy/compile.ts";
import { parsePolicy, PolicyLoadError } from "../../server/policy/load.ts";
import { loadPolicyFile } from "../../server/policy/read.ts";
import { startTestServer } from "../helpers/server.ts";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));
const COMMANDS = fileURLToPath(new URL("./fixtures/commands.ts", import.meta.url));

async function runServerExpectingFailure(policyText: string): Promise<string> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/p.jsonc`, policyText);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, "--port", "0", "--pty-port", "0", "--policy", `${dir}/p.jsonc`],
      env: { SVC_SERVER_TOKEN: "token-for-policy-tests-123" },
      stdin: "null",
    }).output();
    assert.equal(out.code, 2, "the server must refuse to start");
    assert.equal(new TextDecoder().decode(out.stdout), "", "it must not have listened");
    return new TextDecoder().decode(out.stderr).replace(`${dir}/`, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a bad policy stops the server at start with file, line and column", async (t) => {
  await t.step("malformed JSONC", async () => {
    const err = await runServerExpectingFailure('{\n  "preset": "standard"\n  "audit": "all"\n}');
    assert.match(err, /p\.jsonc:3:3: JSONC CommaExpected/);
  });
  await t.step("an unknown key", async () => {
    const err = await runServerExpectingFailure('{\n  // comment\n  "paths": { "allw": [] }\n}');
    assert.match(err, /p\.jsonc:3:14: unknown key "allw" in paths/);
  });
  await t.step("an unknown endpoint id", async () => {
    const err = await runServerExpectingFailure('{ "endpoints": {\n  "shel": false } }');
    assert.match(err, /p\.jsonc:2:3: unknown endpoint id or group "shel"/);
  });
  await t.step("a wrong value", async () => {
    const err = await runServerExpectingFailure('{ "audit": "sometimes" }');
    assert.match(err, /p\.jsonc:1:12: audit: /);
  });
  await t.step("a duplicate key", async () => {
    const err = await runServerExpectingFailure('{ "audit": "off",\n "audit": "all" }');
    assert.match(err, /p\.jsonc:2:2: duplicate key "audit"/);
  });
});

Deno.test("parsePolicy accepts comments and trailing commas", () => {
  const p = parsePolicy(
    '{\n // who\n "identities": [{ "id": "a", "token": "0123456789abcdef", "scopes": ["*"] },],\n}',
    "x.jsonc",
  );
  assert.equal(p.identities?.[0].id, "a");
  assert.throws(() => parsePolicy("[]", "x.jsonc"), PolicyLoadError);
});

Deno.test("a plain JSON policy file reads as its JSONC parse does, duplicates refused alike", async () => {
  const dir = await Deno.makeTempDir();
  const load = async (text: string) => {
    await Deno.writeTextFile(`${dir}/p.json`, text);
    return await loadPolicyFile(`${dir}/p.json`);
  };
  try {
    // Brackets, commas and quotes inside strings are not structure.
    const text = JSON.stringify({
      preset: "standard",
      identities: [{ id: "a,{[", token: 'tok"en}],0123456789', scopes: ["*"] }],
      paths: { allow: ["/w/{x},y"] },
      endpoints: { shell: false },
    });
    assert.deepEqual(await load(text), parsePolicy(text, "p.json"));
    for (
      const [dup, where] of [
        ['{"audit":"off","\\u0061udit":"all"}', /p\.json:1:16: duplicate key "audit"/],
        ['{"identities":[{"id":"a","id":"b","token":"0123456789abcdef"}]}', /duplicate key "id"/],
        ['{"paths":{"allow":[],"deny":[]},"paths":{}}', /:1:33: duplicate key "paths"/],
      ] as const
    ) {
      await assert.rejects(
        load(dup),
        (e: Error) => e instanceof PolicyLoadError && where.test(e.message),
      );
    }
    // The same key in two objects is no duplicate.
    const two =
      '{"identities":[{"id":"a","token":"0123456789abcdef","scopes":["*"]},{"id":"b","token":"0123456789abcdeg","scopes":["*"]}]}';
    assert.deepEqual((await load(two)).identities?.map((i) => i.id), ["a", "b"]);
    // A value the schema refuses gets its position from the JSONC path.
    await assert.rejects(load('{"audit":"sometimes"}'), /p\.json:1:10: audit: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function compile(file: Parameters<typeof compilePolicy>[0], env: Record<string, string> = {}) {
  return compilePolicy(file, {
    root: "/workspace",
    env,
    implemented: new Set(ENDPOINTS.map((e) => e.id).filter((id) => !id.startsWith("agents_"))),
    defaultToken: "default-token-0123456789",
    configured: true,
  });
}

Deno.test("the endpoint rule: each layer and its rule code, highest first", () => {
  const rule = (p: ReturnType<typeof compile>, id: string) => {
    const e = p.endpoints.get(id)!;
    return [e.enabled, e.rule];
  };
  const base = compile({});
  assert.deepEqual(rule(base, "shell"), [true, null]);
  assert.deepEqual(rule(base, "browser_navigate"), [false, "default:opt-in:browser"]);
  assert.deepEqual(rule(base, "agents_create"), [false, "code:unimplemented:agents"]);
  // code: wins over everything, even an explicit policy entry.
  assert.deepEqual(rule(compile({ endpoints: { agents: true } }), "agents_create"), [
    false,
    "code:unimplemented:agents",
  ]);
  assert.deepEqual(rule(compile({ preset: "readonly" }), "shell"), [false, "preset:readonly"]);
  assert.deepEqual(rule(compile({ preset: "minimal" }), "files_list"), [false, "preset:minimal"]);
  assert.deepEqual(rule(compile({ preset: "open" }), "browser_pdf"), [true, "preset:open"]);
  const env = { SANDBAR_GROUP_BROWSER: "1", SANDBAR_GROUP_PROCESS: "off" };
  assert.deepEqual(rule(compile({}, env), "browser_pdf"), [
    true,
    "env:SANDBAR_GROUP_BROWSER:browser",
  ]);
  assert.deepEqual(rule(compile({}, env), "shell"), [false, "env:SANDBAR_GROUP_PROCESS:process"]);
  // The environment switch outranks the preset; the policy file outranks both.
  assert.deepEqual(rule(compile({ preset: "readonly" }, env), "shell"), [
    false,
    "env:SANDBAR_GROUP_PROCESS:process",
  ]);
  assert.deepEqual(rule(compile({ endpoints: { process: true } }, env), "shell"), [
    true,
    "policy:endpoints.process",
  ]);
  // An id entry outranks its group entry.
  const both = compile({ endpoints: { process: false, shell: true } });
  assert.deepEqual(rule(both, "shell"), [true, "policy:endpoints.shell"]);
  assert.deepEqual(rule(both, "process_list"), [false, "policy:endpoints.process"]);
  const bad = compile({}, { SANDBAR_GROUP_BROWSER: "maybe" });
  assert.ok(bad.warnings.some((w) => w.includes("SANDBAR_GROUP_BROWSER")));
});

Deno.test("rule prefixes over real HTTP: policy, preset, env", async () => {
  await using server = await startTestServer({
    commandsFile: COMMANDS,
    policy: { preset: "minimal", endpoints: { commands: false } },
    env: { SANDBAR_GROUP_CORE: "on" },
  });
  const run = await server.fetch("/commands/greet", { method: "POST", body: "{}" });
  assert.equal((await run.json()).rule, "policy:endpoints.commands");
  const ps = await server.fetch("/process");
  assert.equal((await ps.json()).rule, "preset:minimal");
  const agents = await server.fetch("/v1/agents");
  assert.equal((await agents.json()).error.code, "endpoint_disabled");
  const caps = await (await server.fetch("/capabilities")).json();
  // Every endpoint has its handler now, so `code:` shows only in the unit test above.
  assert.equal(caps.endpoints.agents_automations_list.rule, "preset:minimal");
  assert.equal(caps.endpoints.health.rule, "env:SANDBAR_GROUP_CORE:core");
  assert.equal(caps.preset, "minimal");
  assert.equal(caps.configured, true);
  await using envServer = await startTestServer({ env: { SANDBAR_GROUP_COMMANDS: "0" } });
  const list = await envServer.fetch("/commands");
  assert.equal(list.status, 404);
  assert.equal((await list.json()).rule, "env:SANDBAR_GROUP_COMMANDS:commands");
});

Deno.test("a group name stands for its endpoint ids", async () => {
  await using server = await startTestServer({
    commandsFile: COMMANDS,
    policy: { endpoints: { commands: { limits: { rate_per_minute: 1 } } } },
  });
  const first = await server.fetch("/commands");
  assert.equal(first.status, 200);
  await first.body?.cancel();
  assert.equal((await server.fetch("/commands")).status, 429);
  const caps = await (await server.fetch("/capabilities")).json();
  assert.equal(caps.endpoints.commands_run.limits.rate_per_minute, 1);
});

Deno.test("identities: tokens from the file or token_env, the default from SVC_SERVER_TOKEN", async () => {
  await using server = await startTestServer({
    policy: {
      identities: [
        { id: "ci", token_env: "CI_AGENT_TOKEN", scopes: ["files:read"] },
        { id: "lit", token: "literal-token-0123456789", scopes: ["commands:*"] },
      ],
    },
    env: { CI_AGENT_TOKEN: "from-the-environment-123" },
  });
  const who = async (token: string) => {
    const res = await server.fetch("/capabilities", { token });
    return res.status === 200 ? (await res.json()).identity_id : res.status;
  };
  assert.equal(await who("from-the-environment-123"), "ci");
  assert.equal(await who("literal-token-0123456789"), "lit");
  assert.equal(await who(server.token), "default");
  assert.equal(await who("not-a-known-token-000"), 401);
});

Deno.test("with no SVC_SERVER_TOKEN a token is generated, printed once, and works", async () => {
  await using server = await startTestServer({ token: "" });
  const lines = server.stderr().split("\n").filter((l) => l.includes("generated token"));
  assert.equal(lines.length, 1, server.stderr());
  const token = lines[0].split(": ").at(-1)!.trim();
  assert.ok(token.length >= 32);
  const res = await server.fetch("/capabilities", { token });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).identity_id, "default");
});
