/**
 * `deno task bench`: every benchmark under `scripts/bench/`, one after another, each in its own
 * process so that one's warm caches and leftovers do not colour the next. Each prints medians
 * against its same-run baseline and the ratio. Pass names to run some: `deno task bench pipeline`.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/** The benchmarks, in the order they run. */
export const BENCHES = [
  "pipeline",
  "files",
  "process",
  "pty",
  "browser",
  "sandbox",
  "sandbox_shell",
  "engine",
  "code",
  "agents_store",
  "agents",
  "network",
];

/** Run the named benchmarks (all by default). */
export async function main(names: string[] = Deno.args): Promise<number> {
  const chosen = names.length > 0 ? names : BENCHES;
  let failed = 0;
  for (const name of chosen) {
    const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
    try {
      await Deno.stat(file);
    } catch {
      console.log(`${name}: no benchmark yet (${file})`);
      continue;
    }
    console.log(`\n### ${name}`);
    const status = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", file],
      stdin: "null",
    }).spawn().status;
    if (!status.success) {
      failed++;
      console.log(`${name}: exited with ${status.code}`);
    }
  }
  return failed;
}

if (import.meta.main) Deno.exit(await main() > 0 ? 1 : 0);
