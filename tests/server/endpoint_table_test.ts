// The endpoint table: the contract's counts, unique ids and routes, and docs derived from it.
import assert from "node:assert/strict";
import { ENDPOINTS, GROUP_SIZES, GROUPS } from "../../server/endpoints.ts";
import { ENDPOINT_DOCS, renderEndpointDocs } from "../../scripts/endpoint_docs.ts";

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

Deno.test("docs/endpoints.md is generated from the table and up to date", async () => {
  const onDisk = await Deno.readTextFile(ENDPOINT_DOCS);
  assert.equal(onDisk, renderEndpointDocs(), "run: deno run -A scripts/endpoint_docs.ts");
});
