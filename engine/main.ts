/**
 * The engine CLI: `deno run -A engine/main.ts <verb> --manifest FILE --engine NAME [...]`, with
 * verbs `describe`, `covers`, `run` and `check`. JSON goes to stdout; progress lines and the check
 * table go to stderr. `--help` prints the usage on stdout.
 *
 * @module
 */
import { budgetFrom, type CliArgs, modelFrom, parseCli, questionFrom, USAGE } from "./cli_args.ts";
import { parseCases, runConformance } from "./conformance.ts";
import { EngineError } from "./errors.ts";
import { EngineHost, type HostOptions } from "./engine_host.ts";
import { loadManifest, manifestEntry } from "./manifest.ts";
import type { Progress } from "./types.ts";

const PROGRESS_EVERY_MS = 1000;

async function main(argv: string[]): Promise<number> {
  const args = parseCli(argv);
  if (args === "help") {
    console.log(USAGE);
    return 0;
  }
  const entry = manifestEntry(await loadManifest(args.manifest), args.engine);
  const options: HostOptions = {
    graceMs: args.values["grace-ms"] ? Number(args.values["grace-ms"]) : undefined,
    // Late answers to stopped requests are expected; only real misbehaviour is worth a line.
    onDiagnostic: (d) => {
      if (d.kind !== "late") console.error(`[${d.engine}] ${d.kind}: ${d.detail}`);
    },
  };
  if (args.verb === "check") return await check(args, options);
  await using host = await EngineHost.start(entry, options);
  if (args.verb === "describe") {
    print({ engine: entry.name, description: host.description });
  } else if (args.verb === "covers") {
    print(await host.covers(await questionFrom(args), await modelFrom(args)));
  } else {
    const started = Date.now();
    let last = started;
    const onProgress = (p: Progress) => {
      // Quick runs stay quiet; a long one says where it is about once a second.
      if (Date.now() - last < PROGRESS_EVERY_MS) return;
      last = Date.now();
      const counters = (["steps", "runs", "depth"] as const)
        .filter((k) => p[k] !== undefined).map((k) => `${k} ${p[k]}`).join(", ");
      const seconds = ((last - started) / 1000).toFixed(1);
      console.error(`[${entry.name}] ${seconds}s ${counters}${p.text ? ` ${p.text}` : ""}`);
    };
    const question = await questionFrom(args);
    const outcome = await host.run(question, await modelFrom(args), await budgetFrom(args), {
      onProgress,
    });
    print(outcome);
  }
  return 0;
}

async function check(args: CliArgs, options: HostOptions): Promise<number> {
  const path = args.values.cases;
  if (!path) throw new EngineError("invalid", args.engine, "check needs --cases FILE");
  let text: string;
  try {
    text = await Deno.readTextFile(String(path));
  } catch (error) {
    throw new EngineError(
      "invalid",
      "cli",
      `cannot read the cases ${path}: ${(error as Error).message}`,
    );
  }
  const cases = parseCases(text, String(path));
  const entry = manifestEntry(await loadManifest(args.manifest), args.engine);
  const rows = await runConformance(entry, cases, options);
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const row of rows) {
    console.error(`${row.pass ? "PASS" : "FAIL"}  ${row.name.padEnd(width)}  ${row.detail}`);
  }
  const passed = rows.filter((r) => r.pass).length;
  console.error(`${passed} passed, ${rows.length - passed} failed`);
  print({ engine: entry.name, passed: passed === rows.length, checks: rows });
  return passed === rows.length ? 0 : 1;
}

function print(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (error) {
    const e = error instanceof EngineError
      ? error
      : new EngineError("internal", "cli", String(error));
    print({ error: { code: e.code, engine: e.engine, message: e.message } });
    code = 1;
  }
  Deno.exit(code);
}
