/**
 * `network.access: "restricted"` in an agents environment: its commands run in a network
 * namespace of their own whose one way out is the egress bridge to a proxy with the
 * environment's `allowed_domains`, audited under the owner's name. "The internet" is a server
 * this test starts on 127.0.0.2.
 */

import assert from "node:assert/strict";
import { rejection, settled, startAgentsServer } from "./helpers.ts";
import { runtimeSetup } from "./runtime_helpers.ts";
import { startPackageIndex } from "../../helpers/package_index.ts";

Deno.test("environments: network restricted reaches its allowed domains through the proxy, nothing else", async () => {
  const origin = Deno.serve(
    { hostname: "127.0.0.2", port: 0, onListen: () => {} },
    () => new Response("hello from the internet"),
  );
  const port = origin.addr.port;
  try {
    await using server = await startAgentsServer({
      policy: { endpoints: { agents: true }, audit: "all" },
    });
    const { client } = server;
    const create = (allowed: string[], command: string) =>
      client.beta.agents.environments.create({
        environment: {
          type: "openai_hosted",
          network: { access: "restricted", allowed_domains: allowed },
          setup_commands: [{ command }],
        },
      });
    const fetchIt = `curl -sSf --max-time 10 http://127.0.0.2:${port}/ | grep -q 'hello from'`;
    const allowed = await settled(client, (await create(["127.0.0.2"], fetchIt)).id);
    assert.equal(allowed.status, "ready", JSON.stringify(allowed.error));
    const other = await settled(client, (await create(["127.0.0.3"], fetchIt)).id);
    assert.equal(other.status, "failed", "not on the allow list");
    const direct = await settled(
      client,
      (await create(
        ["127.0.0.2"],
        `curl -sSf --noproxy '*' --max-time 5 http://127.0.0.2:${port}/`,
      ))
        .id,
    );
    assert.equal(direct.status, "failed", "a program that ignores the proxy reaches nothing");
    const lines = server.stderr().split("\n").filter((l) => l.includes('"endpoint":"egress"'))
      .map((l) => JSON.parse(l)).map((e) => `${e.identity} ${e.decision} ${e.host} ${e.rule}`);
    assert.deepEqual(lines, [
      "default allow 127.0.0.2 allow:127.0.0.2",
      "default deny 127.0.0.2 allow",
    ]);
    const bad = await rejection(() => create(["x.com:http"], "true"));
    assert.equal(bad.param, "environment.network.allowed_domains");
  } finally {
    await origin.shutdown();
  }
});

Deno.test("environments: pip installs into a virtual environment through a restricted network", async () => {
  const index = await startPackageIndex("127.0.0.2");
  try {
    await using server = await startAgentsServer();
    const { client } = server;
    const env = await client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        network: { access: "restricted", allowed_domains: ["127.0.0.2"] },
        env: { PIP_INDEX_URL: index.url, PIP_DISABLE_PIP_VERSION_CHECK: "1" },
        setup_commands: [
          // Debian's Python (PEP 668: installs go into a virtual environment).
          { command: "/usr/bin/python3 -m venv .venv" },
          { command: ".venv/bin/python -m pip install -q sandbar-egress-probe" },
          {
            command:
              `.venv/bin/python -c "import sandbar_egress_probe as p; print(p.VALUE)" > probe.txt`,
          },
        ],
      },
    });
    const done = await settled(client, env.id);
    assert.equal(done.status, "ready", JSON.stringify(done.error));
    assert.equal(
      await Deno.readTextFile(`${server.root}/agent-environments/${env.id}/probe.txt`),
      "installed through the proxy\n",
    );
  } finally {
    await index.close();
  }
});

Deno.test("environments: packages.python installs into the environment's .venv through a restricted network, and the shell tool's python3 imports it", async () => {
  const index = await startPackageIndex("127.0.0.2");
  try {
    await using t = await runtimeSetup();
    const { client, upstream, server } = t;
    const env = await client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        network: { access: "restricted", allowed_domains: ["127.0.0.2"] },
        env: { PIP_INDEX_URL: index.url, PIP_DISABLE_PIP_VERSION_CHECK: "1" },
        packages: { python: ["sandbar-egress-probe"] },
        setup_commands: [{ command: "command -v python3 > setup-python.txt" }],
      },
    });
    const done = await settled(client, env.id);
    assert.equal(done.status, "ready", JSON.stringify(done.error));
    const workspace = `${server.root}/agent-environments/${env.id}`;
    assert.equal(
      await Deno.readTextFile(`${workspace}/setup-python.txt`),
      `${workspace}/.venv/bin/python3\n`,
      "setup commands after the packages find the venv's python3 first",
    );
    const session = await client.beta.agents.sessions.create({
      environment: { type: "openai_hosted", environment_id: env.id },
      agent: { model: "gpt-test", instructions: "Be brief." },
    });
    upstream.script.push(
      {
        output: [{
          type: "function_call",
          name: "shell",
          arguments: {
            command: `python3 -c "import sandbar_egress_probe as p; print(p.VALUE)"; pip --version`,
          },
        }],
      },
      { output: [{ type: "message", text: "Imported." }] },
    );
    const result = await client.beta.agents.sessions.stream(session.id, { input: "Import it." })
      .finalResult();
    assert.equal(result.turn.status, "completed");
    const last = await upstream.modelCall(2);
    const output = (last.input as { type: string; output?: string }[])
      .find((i) => i.type === "function_call_output")!.output!;
    assert.match(output, /installed through the proxy/);
    assert.ok(output.includes(`${workspace}/.venv/`), output);
  } finally {
    await index.close();
  }
});
