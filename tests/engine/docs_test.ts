/**
 * The TypeScript samples of docs/engine.md that are not run elsewhere, run as written: each is
 * extracted from the page, so the page cannot drift from the code. ("Writing an engine" runs in
 * cli_test.ts, under `check`.)
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fenced, packageImportMap, root } from "./helpers.ts";

Deno.test("the 'Host from code' sample runs and prints what the page says", async () => {
  const docs = await Deno.readTextFile(join(root, "docs/engine.md"));
  const dir = await Deno.makeTempDir({ prefix: "engine-docs-" });
  try {
    const importMap = await packageImportMap(dir);
    const sample = join(dir, "host.ts");
    await Deno.writeTextFile(sample, fenced(docs, "## Host from code", "ts"));
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", "--check", `--import-map=${importMap}`, sample],
      cwd: root,
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const printed = new TextDecoder().decode(output.stdout).trim();
    assert.equal(printed, "violated witnessed 4");
    assert.ok(docs.includes(`It prints \`${printed}\``), "the page quotes what the sample prints");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
