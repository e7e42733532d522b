import assert from "node:assert/strict";
import { join } from "node:path";
import { fenced, packageImportMap, root } from "./helpers.ts";

const manifest = "engine/examples/manifest.jsonc";

async function run(...args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", "engine/main.ts", ...args],
    cwd: root,
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}

async function cli(...args: string[]) {
  const { code, stdout, stderr } = await run(...args);
  return { code, json: JSON.parse(stdout), stderr };
}

/**
 * A directory holding the "Writing an engine" sample of docs/engine.md, its cases file from the
 * same page, and a manifest entry for it; the package name resolves to this checkout.
 */
async function docsSample(cases?: (cases: Record<string, unknown>) => void) {
  const docs = await Deno.readTextFile(join(root, "docs/engine.md"));
  const dir = await Deno.makeTempDir({ prefix: "engine-sample-" });
  await packageImportMap(dir);
  const parsedCases = JSON.parse(fenced(docs, "## The `--cases` file", "json"));
  cases?.(parsedCases);
  await Deno.writeTextFile(join(dir, "mine.ts"), fenced(docs, "## Writing an engine", "ts"));
  await Deno.writeTextFile(join(dir, "cases.json"), JSON.stringify(parsedCases));
  await Deno.writeTextFile(
    join(dir, "engines.jsonc"),
    JSON.stringify({
      engines: {
        mine: {
          command: ["deno", "run", "--quiet", "--import-map=import_map.json", "mine.ts"],
          protocol: 1,
          answers: ["holds"],
          model: ["graphs:1"],
          authority: "observed",
        },
      },
    }),
  );
  return {
    args: ["--manifest", join(dir, "engines.jsonc"), "--engine", "mine", "--cases"],
    dir,
    cases: join(dir, "cases.json"),
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

const STACK_FRAME = /^\s+at .*:\d+:\d+\)?$/m;

Deno.test("--help prints the usage on stdout and exits 0", async () => {
  for (const args of [["--help"], ["-h"], ["run", "--help"]]) {
    const { code, stdout, stderr } = await run(...args);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^usage: deno run -A engine\/main.ts <verb> --manifest FILE/);
    assert.match(stdout, /check {6}run the conformance suite/);
    assert.equal(stderr, "");
  }
});

Deno.test("a misspelt flag or verb is an error naming the nearest known one", async () => {
  const flag = await cli("describe", "--manifst", manifest, "--engine", "explorer");
  assert.equal(flag.code, 1);
  assert.equal(flag.json.error.code, "invalid");
  assert.match(flag.json.error.message, /--manifst.*did you mean --manifest\?/);
  const verb = await cli("chek", "--manifest", manifest, "--engine", "explorer");
  assert.match(verb.json.error.message, /unknown verb chek; did you mean check\?/);
});

Deno.test("check against the docs' engine sample and cases gives a row per check, all passing", async () => {
  await using sample = await docsSample();
  const typeCheck = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", "--import-map=import_map.json", "mine.ts"],
    cwd: sample.dir,
  }).output();
  assert.equal(typeCheck.code, 0, new TextDecoder().decode(typeCheck.stderr));
  const { code, json, stderr } = await cli("check", ...sample.args, sample.cases);
  assert.doesNotMatch(stderr, STACK_FRAME);
  assert.equal(code, 0, stderr);
  assert.deepEqual(json.checks.map((c: { name: string; pass: boolean }) => `${c.name} ${c.pass}`), [
    "handshake true",
    "answer holds true",
    "cancel true",
    "deadline true",
    "clean stdout true",
    "malformed input true",
    "stdin close true",
  ]);
  assert.match(stderr, /^PASS {2}cancel {2,}stopped at once/m);
  assert.match(stderr, /7 passed, 0 failed/);
});

Deno.test("a slow case the engine cannot take is a FAIL row, not a crash", async () => {
  // The engine takes graphs:1 only, so the host refuses to send this model before the run starts.
  await using sample = await docsSample((cases) => {
    cases.slow = { ...cases.slow as object, model: { sources: { library: "1", documents: [] } } };
  });
  const { code, json, stderr } = await cli("check", ...sample.args, sample.cases);
  assert.doesNotMatch(stderr, STACK_FRAME);
  assert.equal(code, 1);
  const cancel = json.checks.find((c: { name: string }) => c.name === "cancel");
  assert.equal(cancel.pass, false);
  assert.match(cancel.detail, /the model has none of the forms the engine takes/);
  assert.match(stderr, /^FAIL {2}deadline/m);
  assert.match(stderr, /^PASS {2}stdin close/m);
});

Deno.test("a cases file missing a field is an error naming it", async () => {
  await using sample = await docsSample((cases) => delete cases.slow);
  const { code, json, stderr } = await cli("check", ...sample.args, sample.cases);
  assert.doesNotMatch(stderr, STACK_FRAME);
  assert.equal(code, 1);
  assert.equal(json.error.code, "invalid");
  assert.match(json.error.message, /the cases file: slow: /);
});

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
