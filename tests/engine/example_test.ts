import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  EngineHost,
  loadManifest,
  manifestEntry,
  type Model,
  parseSchedule,
  type Question,
} from "../../engine/mod.ts";

const examples = fileURLToPath(new URL("../../engine/examples/", import.meta.url));
const deposit = JSON.parse(await Deno.readTextFile(`${examples}models/deposit.json`)) as Model;
const ticker = JSON.parse(await Deno.readTextFile(`${examples}models/ticker.json`)) as Model;
const ask = (kind: Question["kind"], condition?: string, subject = "deposit"): Question => ({
  kind,
  subject,
  schedule: "all",
  free: ["schedule"],
  ...(condition ? { condition: { name: condition } } : {}),
});

async function explorer() {
  const manifest = await loadManifest(`${examples}manifest.jsonc`);
  return await EngineHost.start(manifestEntry(manifest, "explorer"), { graceMs: 500 });
}

Deno.test("the explorer finds the lost update and returns a replayable schedule", async () => {
  await using host = await explorer();
  const { result, verdict } = await host.run(ask("holds", "no lost update"), deposit);
  assert.equal(result.claim, "violated");
  assert.equal(verdict.strength, "witnessed");
  const parsed = parseSchedule(result.witness!.schedules![0]);
  assert.ok(parsed.ok);
  // Both read the old balance before either writes: that is the lost update.
  const moves = parsed.ok ? parsed.steps.map((s) => `${s.move.token}@${s.move.node}`) : [];
  assert.deepEqual(moves.slice(0, 2).map((m) => m.split("@")[0]), ["read", "read"]);
});

Deno.test("a search that hit no bound proves; one that hit a bound is bounded", async () => {
  await using host = await explorer();
  const proved = await host.run(ask("holds", "balance never negative"), deposit);
  assert.equal(proved.verdict.strength, "proved");
  const bounded = await host.run(ask("holds", "never both", "ticker"), ticker, { depth: 6 });
  assert.equal(bounded.result.claim, "holds");
  assert.equal(bounded.verdict.strength, "bounded");
  assert.deepEqual(bounded.result.bounds?.find((b) => b.name === "depth"), {
    name: "depth",
    limit: 6,
    reached: true,
  });
  const found = await host.run(ask("holds", "never both", "ticker"), ticker, { depth: 8 });
  assert.equal(found.result.claim, "violated");
});

Deno.test("outcomes lists each distinct end state with a schedule to it", async () => {
  await using host = await explorer();
  const { result, verdict } = await host.run(ask("outcomes"), deposit);
  assert.equal(verdict.strength, "proved");
  const balances = result.values!.map((v) => String(v.value).split(" ")[0]).sort();
  assert.deepEqual([...new Set(balances)], ["balance=10", "balance=20"]);
  assert.equal(result.executions!.length, result.values!.length);
});

Deno.test("satisfiable: unreachable is proved unsatisfiable; the runs bound caps it", async () => {
  await using host = await explorer();
  const none = await host.run(ask("satisfiable", "balance is 30"), deposit);
  assert.equal(none.result.claim, "unsatisfiable");
  assert.equal(none.verdict.strength, "proved");
  const capped = await host.run(ask("satisfiable", "balance is 30"), deposit, { runs: 1 });
  assert.equal(capped.verdict.strength, "bounded");
  assert.equal(capped.result.bounds?.find((b) => b.name === "runs")?.reached, true);
});

Deno.test("covers says why a question is not taken", async () => {
  await using host = await explorer();
  const covers = await host.covers(
    { ...ask("holds", "no lost update"), free: ["inputs"] },
    deposit,
  );
  assert.deepEqual(covers, { covers: false, reason: "free inputs are not taken" });
  const unknown = await host.covers(ask("holds", "no such assertion"), deposit);
  assert.equal(unknown.covers, false);
});
