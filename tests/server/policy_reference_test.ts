// The policy reference is generated from the policy schema: every key is on the page, with a
// meaning, and a key the schema gains without one stops the generation (so `deno task check`).
import assert from "node:assert/strict";
import { policyProblems } from "../../server/policy/load.ts";
import { MEANINGS, policyKeys, renderPolicyReference } from "../../scripts/policy_reference.ts";

Deno.test("the reference lists every key of the schema, with its type, default and meaning", () => {
  const page = renderPolicyReference();
  for (
    const path of ["env.allow", "upload.allow_extensions", "agents.upstream", "paths.symlinks"]
  ) {
    assert.match(page, new RegExp(`^\\| \`${path.replaceAll(".", "\\.")}\` `, "m"), path);
  }
  assert.match(page, /^\| `endpoints\.<key>\.enabled` \| boolean \|/m);
  assert.match(page, /^\| `endpoints\.<key>\.scopes` \|/m);
  assert.match(page, /^\| `endpoints\.<key>\.limits\.rate_per_minute` \| integer \(≥ 1\) \|/m);
  assert.match(
    page,
    /^\| `paths\.symlinks` \| `"allow"` \\\| `"within"` \\\| `"deny"` \| `within` \|/m,
  );
  assert.match(page, /`\*\*` any depth/, "the glob syntax");
  assert.match(page, /^\| `identities\[\]\.scopes` \*\*required\*\* \|/m);
  assert.equal(policyKeys().length, Object.keys(MEANINGS).length);
});

Deno.test("every key the reference names is one the policy loader takes", () => {
  // A sample policy built from the reference's scalar keys passes the server's own validation.
  const sample = {
    preset: "readonly",
    paths: { allow: ["."], deny: ["**/.env"], read_only: ["ref"], symlinks: "deny" },
    env: { allow: ["HOME"], deny: ["LD_*"] },
    upload: { allow_extensions: [".py"], deny_extensions: ["exe"] },
    limits: { body_bytes: 1, path_max: 10 },
    agents: { upstream: { base_url: "http://127.0.0.1:1/v1", api: "chat_completions" } },
  };
  assert.deepEqual(policyProblems(sample), []);
  const paths = new Set(policyKeys().map((k) => k.path));
  for (const [top, value] of Object.entries(sample)) {
    for (const inner of typeof value === "object" ? Object.keys(value) : []) {
      assert.ok(paths.has(`${top}.${inner}`), `${top}.${inner}`);
    }
  }
});

Deno.test("a key without a meaning, or a meaning without a key, stops the generation", () => {
  const { ["env.allow"]: _gone, ...rest } = MEANINGS;
  assert.throws(
    () => renderPolicyReference({ ...rest, "env.colour": { meaning: "x" } }),
    /out of step with the policy schema; no meaning for env\.allow; no such key env\.colour/,
  );
});
