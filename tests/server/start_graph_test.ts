// What the server loads at start: the module graph `deno run server/main.ts` evaluates before
// its first request (static imports only; `import()` loads on first use), read with `deno info`.
// The browser, agents and code groups load on their first request, and the launcher (which only
// starts the narrowed server) loads none of the server's modules.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { agentsHandlers } from "../../server/agents/handlers.ts";
import { browserHandlers } from "../../server/handlers/browser/index.ts";
import { fileOpsHandlers } from "../../server/handlers/file_ops/index.ts";
import { terminalHandlers } from "../../server/handlers/terminal/index.ts";
import { systemHandlers } from "../../server/handlers/system/index.ts";
import { devToolsHandlers } from "../../server/handlers/dev_tools/index.ts";
import { commandsHandlers } from "../../server/handlers/named_commands/index.ts";
import { ENDPOINTS } from "../../server/endpoints.ts";
import { HANDLERS } from "../../server/handlers/mod.ts";
import { narrowedServerArgv } from "../../server/launch.ts";
import { compilePolicy } from "../../server/policy/compile.ts";

const REPO = new URL("../../", import.meta.url);

interface InfoModule {
  specifier: string;
  dependencies?: { isDynamic?: boolean; code?: { specifier?: string } }[];
}

/** Every module `entry` reaches through static imports. */
async function staticGraph(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", fileURLToPath(new URL(entry, REPO))],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success, "deno info failed");
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const todo = [...info.roots];
  while (todo.length > 0) {
    const s = todo.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    for (const d of bySpecifier.get(s)?.dependencies ?? []) {
      if (!d.isDynamic && d.code?.specifier) todo.push(d.code.specifier);
    }
  }
  return [...seen].map((s) => s.replace(REPO.href, ""));
}

const LATE = [
  /^server\/browser\//,
  /^server\/handlers\/browser\//,
  /^server\/agents\/(?!config\.ts$)/, // the data directory's default is read at start
  /^server\/code\//,
  /^npm:.*(puppeteer|modelcontextprotocol|croner|eventsource-parser|fake-timers|express)/,
  // Node's crypto, DNS and V8 layers cost the start tens of ms of CPU: loaded where first used.
  /^node:(crypto|dns|v8|vm)/,
  // CommonJS (jsonc-parser) brings Node's module loader: only for a policy that is not plain JSON.
  /^npm:.*jsonc-parser/,
];

Deno.test("the server's start graph has no browser, agents, code, MCP, test library or Node crypto", async () => {
  const graph = await staticGraph("server/serve.ts");
  const early = graph.filter((m) => LATE.some((re) => re.test(m)));
  assert.deepEqual(early, []);
  assert.ok(graph.includes("server/handlers/process/index.ts"), "the process group loads at start");
  assert.ok(graph.includes("server/handlers/core/index.ts"), "the core group loads at start");
  // The other groups load on their first request.
  for (const group of ["file_ops", "terminal", "system", "dev_tools", "named_commands"]) {
    assert.ok(!graph.includes(`server/handlers/${group}/index.ts`), `${group} loads at start`);
  }
});

Deno.test("the launcher loads none of the server's handlers", async () => {
  const graph = await staticGraph("server/main.ts");
  assert.deepEqual(graph.filter((m) => m.startsWith("server/handlers/")), []);
  assert.ok(!graph.includes("server/serve.ts"));
  assert.deepEqual(graph.filter((m) => LATE.some((re) => re.test(m))), []);
  // Nor the policy reader's schema (zod): only a launcher given --policy loads it.
  assert.deepEqual(graph.filter((m) => /^npm:.*zod/.test(m)), []);
});

Deno.test("the server's modules loaded on first use are not read at start", async () => {
  // Deno walks the whole graph, dynamic imports included, before the first line runs, unless
  // told not to: the narrowed server's command line and the checkout's deno.json both say so.
  const policy = compilePolicy({}, {
    root: "/",
    env: {},
    implemented: new Set(ENDPOINTS.map((e) => e.id)),
    defaultToken: "0123456789abcdef0123",
    configured: false,
  });
  const argv = narrowedServerArgv({
    policy,
    root: "/",
    host: "127.0.0.1",
    stateDir: "/tmp/s",
    serverArgs: [],
  });
  assert.ok(argv.indexOf("--unstable-lazy-dynamic-imports") < argv.indexOf("--no-narrow"));
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", REPO)));
  assert.ok(config.unstable.includes("lazy-dynamic-imports"));
});

Deno.test("groups loaded on first use answer every id of the table, and only those", () => {
  const ids = (group: string) => ENDPOINTS.filter((e) => e.group === group).map((e) => e.id);
  assert.deepEqual(Object.keys(agentsHandlers).sort(), ids("agents").sort());
  assert.deepEqual(Object.keys(browserHandlers).sort(), ids("browser").sort());
  assert.deepEqual(Object.keys(fileOpsHandlers).sort(), ids("file_ops").sort());
  assert.deepEqual(Object.keys(terminalHandlers).sort(), ids("terminal").sort());
  assert.deepEqual(Object.keys(systemHandlers).sort(), ids("system").sort());
  assert.deepEqual(Object.keys(devToolsHandlers).sort(), ids("dev_tools").sort());
  assert.deepEqual(Object.keys(commandsHandlers).sort(), ids("commands").sort());
  assert.deepEqual(Object.keys(HANDLERS).sort(), ENDPOINTS.map((e) => e.id).sort());
});

Deno.test("the relay preloaded into every sandbox's server loads the egress bridge only for a network section", async () => {
  const graph = await staticGraph("sdk/providers/local/relay.ts");
  // Its egress bridge (and Node's URL layer with it) and the supervisor's side of the channel.
  const late = graph.filter((m) =>
    m.startsWith("server/egress/") || m.startsWith("node:") ||
    m === "sdk/providers/local/channel.ts"
  );
  assert.deepEqual(late, []);
  assert.ok(graph.includes("sdk/providers/local/channel_env.ts"));
});

Deno.test("the egress proxy loads at start only in a server whose policy has a network section", async () => {
  const graph = await staticGraph("server/serve.ts");
  for (
    const m of [
      "server/egress/proxy.ts",
      "server/egress/identity_proxies.ts",
      "server/egress/socket_proxies.ts",
    ]
  ) {
    assert.ok(!graph.includes(m), `${m} loads at start`);
  }
});
