// The client parts of the SDK under Node: the package bundled as one ES module (deno bundle, the
// way a Node project's bundler would take it from JSR), loaded by this machine's `node`, talking
// to a real server. What needs Deno says so in one clear error.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../helpers/server.ts";

const SDK = fileURLToPath(new URL("../../sdk/mod.ts", import.meta.url));

function nodeVersion(): number | undefined {
  try {
    const out = new Deno.Command("node", { args: ["--version"] }).outputSync();
    return Number(/^v(\d+)/.exec(new TextDecoder().decode(out.stdout))?.[1]);
  } catch {
    return undefined;
  }
}
const node = nodeVersion();

const SCRIPT = `
import { NotFoundError, ProviderFeatureNotSupportedError, Sandbox, ServerClient, ServerNotFoundError } from "./sdk.mjs";
const out = { runtime: typeof Deno === "undefined" ? "node" : "deno" };
const client = new ServerClient(process.env.URL, { token: process.env.TOKEN });
const caps = await client.discover();
out.shell = caps.can("shell");
out.stdout = (await client.process.shell("echo hi")).stdout;
await client.process.shell("printf 'from node' > note.txt");
out.read = await client.files.readText("note.txt");
try { await client.files.stat("missing.txt"); } catch (e) {
  out.missing = [e instanceof ServerNotFoundError, e instanceof NotFoundError, e.serverCode];
}
for (const [name, call] of [
  ["create", () => Sandbox.create()],
  ["uploadFile", () => client.files.uploadFile("/etc/hostname", "h.txt")],
]) {
  try { await call(); out[name] = "resolved"; } catch (e) {
    out[name] = [e instanceof ProviderFeatureNotSupportedError, e.message];
  }
}
await client.close();
console.log(JSON.stringify(out));
`;

Deno.test({
  name:
    "ServerClient, its capabilities, errors and models work under Node; the rest says it needs Deno",
  ignore: node === undefined || node < 20, // ignored without Node 20+ on this machine
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "sandbar-node-" });
    try {
      const bundle = await new Deno.Command(Deno.execPath(), {
        args: ["bundle", "--quiet", "--platform", "browser", "-o", join(dir, "sdk.mjs"), SDK],
      }).output();
      assert.equal(bundle.code, 0, new TextDecoder().decode(bundle.stderr));
      await Deno.writeTextFile(join(dir, "main.mjs"), SCRIPT);
      await using server = await startTestServer();
      const run = await new Deno.Command("node", {
        args: ["main.mjs"],
        cwd: dir,
        env: { URL: server.url, TOKEN: server.token },
      }).output();
      const stderr = new TextDecoder().decode(run.stderr);
      assert.equal(run.code, 0, stderr);
      const out = JSON.parse(new TextDecoder().decode(run.stdout));
      assert.equal(out.runtime, "node");
      assert.equal(out.shell, true);
      assert.equal(out.stdout, "hi\n");
      assert.equal(out.read, "from node");
      assert.deepEqual(out.missing, [true, true, "not_found"]);
      for (const name of ["create", "uploadFile"]) {
        assert.equal(out[name][0], true, `${name}: ${out[name]}`);
        assert.match(out[name][1], /needs Deno; under this runtime only the client parts work/);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
