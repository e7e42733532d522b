// What holds for every page of README.md and docs/: each TypeScript sample is run by
// `deno test --doc` (the `test` task runs it over README.md and docs/) or by a test named on the
// page, or is marked a sketch in its fence with the reason above it; the error body the pages
// describe is the server's; and no page sends the reader to a document outside the repository.
import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestServer } from "../helpers/server.ts";
import { type Fence, fences, pages, root } from "./samples.ts";

const TS = /^(ts|typescript)(\s|$)/;

async function allFences(): Promise<Fence[]> {
  const found: Fence[] = [];
  for (const page of await pages()) {
    found.push(...fences(page, await Deno.readTextFile(join(root, page))));
  }
  return found;
}

async function testExcludes(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  return config.test?.exclude ?? [];
}

Deno.test("the test task runs the samples of README.md and docs/", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  const task: string = config.tasks.test;
  assert.match(task, /--doc\b/);
  for (const path of ["README.md", "docs/"]) assert.ok(task.split(" ").includes(path), path);
});

Deno.test("every TypeScript sample is run, or marked a sketch with its reason", async () => {
  const samples = (await allFences()).filter((f) => TS.test(f.info));
  assert.ok(samples.length >= 8, `only ${samples.length} samples found`);
  for (const f of samples) {
    const where = `${f.page}:${f.line}`;
    const words = f.info.split(/\s+/);
    assert.ok(
      words.every((w) => ["ts", "typescript", "ignore"].includes(w)),
      `${where}: fence \`\`\`${f.info}: only \`ignore\` is understood`,
    );
    if (words.includes("ignore")) {
      assert.match(f.before, /sketch/i, `${where}: a sketch says so above its fence`);
      assert.match(f.before, /because|needs|since/i, `${where}: a sketch says why`);
      // A sketch that a test runs names the test, and the test exists.
      for (const [test] of f.before.matchAll(/tests\/[\w/]+_test\.ts/g)) {
        await Deno.stat(join(root, test));
      }
    }
  }
});

/** Every `*_test.ts` below `dir`, at any depth. */
async function testFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await testFiles(path));
    else if (entry.name.endsWith("_test.ts")) found.push(path);
  }
  return found;
}

Deno.test("pages excluded from deno test --doc are run by tests that read them", async () => {
  for (const page of await testExcludes()) {
    const readers: string[] = [];
    for (const file of await testFiles(join(root, "tests"))) {
      if ((await Deno.readTextFile(file)).includes(page)) readers.push(file);
    }
    assert.ok(readers.length > 0, `${page} is excluded from --doc but no test reads it`);
  }
});

// The repository's own `shared/` folder (leaves of the three parts) may be named; the design
// notes and contracts kept beside the repository may not.
Deno.test("no page points to a document outside the repository", async () => {
  const outside =
    /\.\.\/shared\/|\bshared\/(?:spec|research|hooks|DESIGN)|\bspec\/[\w-]+\.md|\bthe contract\b|contract's|\bpain points?\b|\bresearch\b|\bissue \d+/i;
  for (const page of await pages()) {
    const lines = (await Deno.readTextFile(join(root, page))).split("\n");
    lines.forEach((line, i) => {
      assert.doesNotMatch(line, outside, `${page}:${i + 1}: ${line}`);
    });
  }
});

Deno.test("the error body the pages describe is what the server sends, an unknown route included", async () => {
  const policy = await Deno.readTextFile(join(root, "docs/server/policy.md"));
  const quoted = /`(\{"error": "Not found: <path>"[^`]*\})`/.exec(policy);
  assert.ok(quoted, "docs/server/policy.md quotes the answer to an unmatched route");
  await using server = await startTestServer();
  const res = await server.fetch("/no/such/route");
  assert.equal(res.status, 404);
  assert.deepEqual(
    await res.json(),
    JSON.parse(quoted[1].replace("<path>", "/no/such/route")),
  );
  // A refusal on a matched route names its endpoint too.
  const refused = await server.fetch("/files/stat?path=missing.txt");
  const body = await refused.json();
  assert.deepEqual([refused.status, body.code, body.endpoint], [404, "not_found", "files_stat"]);
});
