/**
 * Reading the TypeScript samples of the repository's Markdown pages, for the tests that run a
 * sample `deno test --doc` skips (a sketch that needs something the page cannot start) and for
 * the check that every sample is either run or marked as a sketch.
 *
 * @module
 */

import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The repository's root directory. */
export const root: string = fileURLToPath(new URL("../../", import.meta.url));

/** One fenced code block of a Markdown page. */
export interface Fence {
  /** The page, relative to the root. */
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** What follows the backticks of the opening fence (`ts`, `ts ignore`, `json`, …). */
  info: string;
  /** The block's text. */
  body: string;
  /** The paragraph just above the block. */
  before: string;
}

/** Every fenced block of a Markdown page. */
export function fences(page: string, markdown: string): Fence[] {
  const lines = markdown.split("\n");
  const found: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.indexOf("```", i + 1);
    if (end < 0) throw new Error(`${page}:${i + 1}: a fence that never closes`);
    let start = i;
    while (start > 0 && lines[start - 1].trim() === "") start--;
    let top = start;
    while (top > 0 && lines[top - 1].trim() !== "" && !lines[top - 1].startsWith("```")) top--;
    found.push({
      page,
      line: i + 1,
      info: open[1].trim(),
      body: lines.slice(i + 1, end).join("\n"),
      before: lines.slice(top, start).join("\n"),
    });
    i = end;
  }
  return found;
}

/** README.md and every page under docs/, relative to the root. */
export async function pages(): Promise<string[]> {
  const found = ["README.md"];
  async function walk(dir: string) {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith(".md")) found.push(relative(root, path));
    }
  }
  await walk(join(root, "docs"));
  return found.sort();
}

/** The first block after the heading that starts with `heading` whose info is `info`. */
export async function sampleAfter(page: string, heading: string, info: string): Promise<string> {
  const markdown = await Deno.readTextFile(join(root, page));
  const at = markdown.indexOf(`\n${heading}`);
  if (at < 0) throw new Error(`${page}: no heading ${heading}`);
  const lineOfHeading = markdown.slice(0, at + 1).split("\n").length;
  const fence = fences(page, markdown).find((f) => f.line > lineOfHeading && f.info === info);
  if (!fence) throw new Error(`${page}: no \`\`\`${info} block after ${heading}`);
  return fence.body;
}

/**
 * Writes an import map into `dir` under which `@sandbar/sandbar` (and its `/sdk`, `/server`,
 * `/engine` entries) is this checkout, as in a project that installed the package, plus the
 * package's own dependencies; returns its path.
 */
export async function packageImportMap(dir: string): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  const imports: Record<string, string> = { ...config.imports };
  for (const [entry, target] of Object.entries<string>(config.exports)) {
    const name = entry === "." ? config.name : `${config.name}${entry.slice(1)}`;
    imports[name] = pathToFileURL(join(root, target)).href;
  }
  const path = join(dir, "import_map.json");
  await Deno.writeTextFile(path, JSON.stringify({ imports }));
  return path;
}
