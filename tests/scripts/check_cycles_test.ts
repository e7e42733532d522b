/**
 * The import-cycle check run as `deno task check` runs it, on a tree planted in a temporary
 * directory: a cycle fails with its files named, a one-way tree passes, test files are not checked.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("../../scripts/check_cycles.ts", import.meta.url));

async function plant(files: Record<string, string>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "check_cycles_" });
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(dirname(join(root, path)), { recursive: true });
    await Deno.writeTextFile(join(root, path), text);
  }
  return root;
}

async function check(root: string): Promise<{ code: number; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-run", SCRIPT, "--root", root],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, output: text.decode(out.stdout) + text.decode(out.stderr) };
}

Deno.test("check_cycles: a planted cycle fails with the cycle's files in the message", async () => {
  const root = await plant({
    "server/state.ts": `import { near } from "./request.ts";\nexport const s = near;\n`,
    "server/request.ts":
      `import { registry } from "./commands/registry.ts";\nexport const near = registry;\n`,
    "server/commands/registry.ts":
      `import type { s } from "../state.ts";\nexport const registry = 1;\nexport type T = typeof s;\n`,
    "sdk/mod.ts": `export const ok = 1;\n`,
  });
  try {
    const { code, output } = await check(root);
    assert.equal(code, 1, output);
    assert.match(output, /1 import cycle/);
    assert.match(
      output,
      /server\/commands\/registry\.ts → server\/state\.ts → server\/request\.ts → server\/commands\/registry\.ts/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_cycles: a module importing itself is a cycle too", async () => {
  const root = await plant({ "engine/self.ts": `import "./self.ts";\nexport const x = 1;\n` });
  try {
    const { code, output } = await check(root);
    assert.equal(code, 1, output);
    assert.match(output, /engine\/self\.ts → engine\/self\.ts/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_cycles: imports that run one way pass, and test files are not checked", async () => {
  const root = await plant({
    "server/app.ts": `import { store } from "./store.ts";\nexport const app = store;\n`,
    "server/store.ts": `export const store = 1;\n`,
    "server/store_test.ts":
      `import { app } from "./app.ts";\nimport "./store_test.ts";\nexport const t = app;\n`,
    "server/version.ts": `import { app } from "./app.ts";\nexport const version = app;\n`,
    // The SDK imports a module the server shares with it (SDK_SERVER_IMPORTS).
    "sdk/mod.ts": `import { version } from "../server/version.ts";\nexport const e = version;\n`,
  });
  try {
    const { code, output } = await check(root);
    assert.equal(code, 0, output);
    assert.match(output, /no import cycles/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_cycles: an import against the layers fails without a cycle, naming the rule", async () => {
  const root = await plant({
    "server/agents/service.ts":
      `import { runtime } from "./runtime/runtime.ts";\nexport const service = runtime;\n`,
    "server/agents/runtime/runtime.ts": `export const runtime = 1;\n`,
    "server/agents/runtime/lookup.ts":
      `import { service } from "../service.ts";\nexport const s = service;\n`,
    "server/agents/resources/agents.ts":
      `import { service } from "../service.ts";\nexport const h = service;\n`,
    "shared/leaf.ts":
      `import { runtime } from "../server/agents/runtime/runtime.ts";\nexport const l = runtime;\n`,
  });
  try {
    const { code, output } = await check(root);
    assert.equal(code, 1, output);
    assert.doesNotMatch(output, /import cycle/);
    assert.match(output, /2 import\(s\) against the layers/);
    assert.match(
      output,
      /server\/agents\/runtime\/lookup\.ts → server\/agents\/service\.ts \(only the HTTP layer/,
    );
    assert.match(output, /shared\/leaf\.ts → server\/agents\/runtime\/runtime\.ts \(shared\//);
    assert.doesNotMatch(output, /resources\/agents\.ts →/); // the HTTP layer may look it up
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_cycles: the server never imports the SDK; the SDK imports only the server modules it shares", async () => {
  const root = await plant({
    "server/egress/rules.ts": `export const rules = 1;\n`,
    "server/state.ts": `export const state = 1;\n`,
    "server/pipeline/run.ts":
      `import { options } from "../../sdk/options.ts";\nexport const r = options;\n`,
    "sdk/options.ts":
      `import { rules } from "../server/egress/rules.ts";\nexport const options = rules;\n`,
    "sdk/providers/local.ts":
      `import { state } from "../../server/state.ts";\nexport const local = state;\n`,
  });
  try {
    const { code, output } = await check(root);
    assert.equal(code, 1, output);
    assert.doesNotMatch(output, /import cycle/);
    assert.match(output, /2 import\(s\) against the layers/);
    assert.match(
      output,
      /server\/pipeline\/run\.ts → sdk\/options\.ts \(the server never imports the SDK/,
    );
    assert.match(
      output,
      /sdk\/providers\/local\.ts → server\/state\.ts \(the SDK imports only the server modules it shares with it \(SDK_SERVER_IMPORTS\)\)/,
    );
    assert.doesNotMatch(output, /sdk\/options\.ts →/); // the egress rules are shared
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
