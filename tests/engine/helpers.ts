import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { EngineEntry } from "../../engine/mod.ts";

const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));

/** The checkout's root directory. */
export const root = fileURLToPath(new URL("../../", import.meta.url));

/** The body of the first fenced block in `lang` after the heading that starts with `heading`. */
export function fenced(markdown: string, heading: string, lang: string): string {
  const section = markdown.slice(markdown.indexOf(`\n${heading}`));
  const match = new RegExp("```" + lang + "\\n([\\s\\S]*?)\\n```").exec(section);
  assert.ok(match, `no ${lang} block after ${heading}`);
  return match[1];
}

/**
 * Writes an import map into `dir` under which `@sandbar/sandbar/engine` is this checkout's engine,
 * as a project that installed the package would see it; returns its path.
 */
export async function packageImportMap(dir: string): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  const imports = {
    ...config.imports,
    "@sandbar/sandbar/engine": pathToFileURL(join(root, "engine/mod.ts")).href,
  };
  const path = join(dir, "import_map.json");
  await Deno.writeTextFile(path, JSON.stringify({ imports }));
  return path;
}

/** A manifest entry for the rogue fixture in `mode`, matching what that fixture describes. */
export function rogue(mode: string, overrides: Partial<EngineEntry> = {}): EngineEntry {
  return {
    name: `rogue-${mode}`,
    describedName: "rogue",
    command: [Deno.execPath(), "run", "--quiet", "--no-prompt", "rogue.ts", mode],
    cwd: fixtures,
    env: {},
    protocol: 1,
    answers: ["holds"],
    bounds: ["depth"],
    witness: "schedule",
    model: ["graphs:1"],
    authority: "bounded",
    concurrent: mode === "concurrent",
    ...overrides,
  };
}

export const question = {
  kind: "holds" as const,
  subject: "deposit",
  schedule: "all",
  free: ["schedule" as const],
  condition: { name: "no lost update" },
};

export const model = { graphs: { version: 1, subject: "deposit" } };

/** Whether a process with this pid still exists (zombies included). */
export function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Fast escalation for tests: every grace period is 200 ms. */
export const fast = { graceMs: 200, runIdleMs: 5000, describeTimeoutMs: 5000 };
