// Handler maps are typed by the endpoint table's ids: copies of the real group maps, with one id
// misspelled or left out, are compiled by `deno check` in a temp dir and must fail; unchanged
// copies must pass.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = new URL("../../", import.meta.url);
const CONFIG = fileURLToPath(new URL("deno.json", REPO));

/** The text of a repository file with its relative imports made absolute. */
async function copyOf(path: string): Promise<string> {
  const url = new URL(path, REPO);
  const text = await Deno.readTextFile(url);
  return text.replace(
    /(from |import\()"(\.{1,2}\/[^"]+)"/g,
    (_, head, rel) => `${head}"${new URL(rel, url).href}"`,
  );
}

function replaceOnce(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `the copy has ${JSON.stringify(from)}`);
  return text.replace(from, to);
}

async function check(files: Record<string, string>): Promise<{ ok: boolean; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-handler-types-" });
  try {
    const paths = [];
    for (const [name, text] of Object.entries(files)) {
      const path = join(dir, name);
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.writeTextFile(path, text);
      paths.push(path);
    }
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--quiet", "--config", CONFIG, ...paths],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { ok: out.success, output: decode(out.stdout) + decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("deno check passes on unchanged copies of the handler maps", async () => {
  const result = await check({
    "process_map.ts": await copyOf("server/handlers/process/index.ts"),
    "all_handlers.ts": await copyOf("server/handlers/mod.ts"),
  });
  assert.ok(result.ok, result.output);
});

Deno.test("deno check fails on a misspelled or a missing handler id", async () => {
  const processMap = await copyOf("server/handlers/process/index.ts");
  const all = await copyOf("server/handlers/mod.ts");
  const result = await check({
    "misspelled.ts": replaceOnce(
      processMap,
      "process_get: processGet,",
      "process_gte: processGet,",
    ),
    "missing.ts": replaceOnce(processMap, "  process_get: processGet,\n", ""),
    "group_left_out.ts": replaceOnce(all, '  ...onFirstRequest("browser"),\n', ""),
  });
  assert.equal(result.ok, false, "the wrong maps type-check");
  const errors = result.output.split(/\n(?=TS\d+ )/);
  const about = (file: string) => errors.filter((e) => e.includes(`${file}:`)).join("\n");
  assert.match(about("misspelled.ts"), /'process_gte' does not exist/);
  assert.match(about("missing.ts"), /Property 'process_get' is missing/);
  assert.match(about("group_left_out.ts"), /missing the following properties[^\n]*browser_/);
});
