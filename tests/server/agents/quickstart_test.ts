import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startAgentsServer } from "./helpers.ts";

const DOC = fileURLToPath(new URL("../../../docs/server/agents.md", import.meta.url));
const CONFIG = fileURLToPath(new URL("../../../deno.json", import.meta.url));

Deno.test("docs/server/agents.md: the quickstart runs against a real server", async () => {
  const text = await Deno.readTextFile(DOC);
  const m = /## Quickstart[\s\S]*?```ts ignore\n([\s\S]*?)\n```/.exec(text);
  assert.ok(m, "the quickstart block is in the page");
  const dir = await Deno.makeTempDir({ prefix: "sandbar-quickstart-" });
  try {
    const script = `${dir}/quickstart.ts`;
    await Deno.writeTextFile(script, m[1]);
    await using server = await startAgentsServer();
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", CONFIG, script],
      env: { SANDBAR_URL: server.url, SVC_SERVER_TOKEN: server.token },
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    // What the quickstart made is there for anyone with the token.
    const agents = await server.client.beta.agents.list();
    assert.equal(agents.data[0].name, "reviewer");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
