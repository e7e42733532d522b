import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const manifest = "engine/examples/manifest.jsonc";

async function cli(...args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", "engine/main.ts", ...args],
    cwd: root,
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    json: JSON.parse(text.decode(output.stdout)),
    stderr: text.decode(output.stderr),
  };
}

Deno.test("check passes for the example engine and prints a pass/fail table", async () => {
  const { code, json, stderr } = await cli(
    "check",
    "--manifest",
    manifest,
    "--engine",
    "explorer",
    "--cases",
    "engine/examples/cases.json",
  );
  assert.equal(code, 0, stderr);
  assert.equal(json.passed, true);
  const names = json.checks.map((c: { name: string }) => c.name);
  for (const name of ["handshake", "cancel", "deadline", "malformed input", "stdin close"]) {
    assert.ok(names.includes(name), name);
  }
  assert.match(stderr, /^PASS {2}handshake/m);
  assert.match(stderr, /9 passed, 0 failed/);
});

Deno.test("run from flags prints the result and the verdict as JSON", async () => {
  const { code, json } = await cli(
    "run",
    "--manifest",
    manifest,
    "--engine",
    "explorer",
    "--question-kind",
    "holds",
    "--subject",
    "deposit",
    "--condition",
    "no lost update",
    "--model",
    "engine/examples/models/deposit.json",
    "--depth",
    "10",
    "--deadline",
    "30s",
  );
  assert.equal(code, 0);
  assert.equal(json.result.claim, "violated");
  assert.equal(json.verdict.strength, "witnessed");
  assert.deepEqual(json.bounds, [
    { name: "depth", limit: 10 },
    { name: "steps", limit: 0 },
    { name: "runs", limit: 0 },
  ]);
});

Deno.test("describe prints the Description; an unknown engine is a JSON error", async () => {
  const ok = await cli("describe", "--manifest", manifest, "--engine", "explorer");
  assert.equal(ok.json.description.name, "explorer");
  const bad = await cli("describe", "--manifest", manifest, "--engine", "nope");
  assert.equal(bad.code, 1);
  assert.equal(bad.json.error.code, "manifest");
});
