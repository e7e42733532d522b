// The RestProvider sketch of docs/sdk/sandbox.md, type-checked and run as written (a separate
// program importing `@sandbar/sandbar` through an import map) against a REST control plane
// whose sandboxes are real local sandboxes.
import assert from "node:assert/strict";
import { join } from "node:path";
import { packageImportMap, root, sampleAfter } from "./samples.ts";
import { startControlPlane } from "./rest_control_plane.ts";

Deno.test("the RestProvider sketch creates, uses, lists and kills a sandbox through a REST control plane", async () => {
  const dir = await Deno.makeTempDir({ prefix: "docs-rest-" });
  try {
    await using plane = startControlPlane(join(dir, "home"));
    const sample = join(dir, "rest_provider.ts");
    await Deno.writeTextFile(
      sample,
      await sampleAfter("docs/sdk/sandbox.md", "## Adding a provider", "ts ignore"),
    );
    const importMap = await packageImportMap(dir);
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", "--check", `--import-map=${importMap}`, sample],
      cwd: root,
      env: { REST_API_URL: plane.url, REST_API_KEY: plane.apiKey },
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    assert.equal(new TextDecoder().decode(output.stdout), "hello from sandbox\ndocs\n");
    assert.deepEqual(plane.calls.map((c) => c.replace(/\/[a-z0-9]{20}\b/, "/<id>")), [
      "POST /sandboxes",
      "GET /v2/sandboxes",
      "DELETE /sandboxes/<id>",
    ]);
    // `await using` in the sample killed it: the control plane has nothing left.
    assert.deepEqual(await plane.provider.list({ limit: 100, offset: 0 }), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
