// The endpoint table: the contract's counts, unique ids and routes, and docs derived from it.
import assert from "node:assert/strict";
import { ENDPOINTS, GROUP_SIZES, GROUPS } from "../../server/endpoints.ts";
import { dirname, join } from "node:path";
import { generatedFiles, staleFiles } from "../../scripts/generate_endpoint_files.ts";

const GENERATOR = new URL("../../scripts/generate_endpoint_files.ts", import.meta.url).href;

Deno.test("the table has the contract's 118 endpoints in its group counts", () => {
  assert.equal(ENDPOINTS.length, 118);
  assert.deepEqual(
    Object.fromEntries([...GROUPS].map(([g, ids]) => [g, ids.length])),
    GROUP_SIZES,
  );
  assert.equal(new Set(ENDPOINTS.map((e) => e.id)).size, 118, "ids are unique");
  const routes = ENDPOINTS.map((e) => `${e.port} ${e.method} ${e.path}`);
  assert.equal(new Set(routes).size, 118, "routes are unique");
  for (const e of ENDPOINTS) {
    assert.equal(e.group === "agents", e.path.startsWith("/v1/"), e.id);
    if (e.group === "agents") assert.ok(e.id.startsWith("agents_"), e.id);
    assert.equal(e.port === "pty", e.id === "pty_connect", e.id);
  }
  assert.equal(ENDPOINTS.filter((e) => e.public).map((e) => e.id).join(), "health");
  assert.ok(ENDPOINTS.some((e) => e.id === "files_upload_legacy" && e.path === "/upload"));
  assert.ok(ENDPOINTS.some((e) => e.id === "files_download_legacy" && e.path === "/download"));
});

Deno.test("docs/endpoints.md, sdk/client/routes.ts and the policy reference are generated, current", async () => {
  assert.deepEqual(generatedFiles().map((f) => f.path), [
    "docs/endpoints.md",
    "sdk/client/routes.ts",
    "docs/server/policy_reference.md",
  ]);
  assert.deepEqual(await staleFiles(), [], "run: deno run -A scripts/generate_endpoint_files.ts");
  const check = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", GENERATOR, "--check"],
  }).output();
  assert.equal(check.code, 0, "the generator's --check passes on the repository");
});

Deno.test("a stale or a missing generated file is found", async () => {
  const root = await Deno.makeTempDir({ prefix: "sandbar-generated-" });
  try {
    for (const { path, text } of generatedFiles()) {
      await Deno.mkdir(dirname(join(root, path)), { recursive: true });
      const edited = path.endsWith("routes.ts")
        ? text.replace('"GET /files"', '"GET /file"')
        : text;
      await Deno.writeTextFile(join(root, path), edited);
    }
    assert.deepEqual(await staleFiles(root), ["sdk/client/routes.ts"]);
    await Deno.remove(join(root, "docs/endpoints.md"));
    assert.deepEqual(await staleFiles(root), ["docs/endpoints.md", "sdk/client/routes.ts"]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
