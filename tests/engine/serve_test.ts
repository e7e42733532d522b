import assert from "node:assert/strict";
import { EngineError, EngineHost, type Question } from "../../engine/mod.ts";
import { alive, fast, model, rogue } from "./helpers.ts";

const served = rogue("served", {
  describedName: "served",
  command: [Deno.execPath(), "run", "--quiet", "-A", "served.ts"],
  answers: ["holds", "satisfiable"],
  bounds: undefined,
  witness: undefined,
  concurrent: false,
});
const ask = (subject: string, kind: Question["kind"] = "holds"): Question => ({
  kind,
  subject,
  schedule: "all",
  free: ["schedule"],
});

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "resolved";
  } catch (error) {
    assert.ok(error instanceof EngineError);
    return `${error.code}: ${error.message}`;
  }
}

Deno.test("serveEngine answers describe with the protocols it was offered", async () => {
  await using host = await EngineHost.start(served, fast);
  assert.equal(host.description.version, "for 1");
});

Deno.test("serveEngine maps thrown errors to unsupported, budget and internal", async () => {
  await using host = await EngineHost.start(served, fast);
  assert.match(
    await code(host.run(ask("x", "sweep"), model)),
    /^unsupported: .*sweep questions are not taken/,
  );
  assert.match(
    await code(host.run(ask("exhausted"), model)),
    /^budget: .*depth bound of 3 exhausted/,
  );
  assert.match(await code(host.run(ask("crash"), model)), /^internal: .*cannot read properties/);
  assert.match(await code(host.run(ask("invalid"), model)), /^internal: .*result\.strength/);
  assert.deepEqual(await host.covers(ask("x", "satisfiable"), model), { covers: true });
  assert.deepEqual(await host.covers(ask("x", "outcomes"), model), { covers: false });
  assert.equal((await host.run(ask("fine"), model)).result.claim, "holds");
});

Deno.test("cancel fires the run's signal and the engine answers, freeing its slot", async () => {
  await using host = await EngineHost.start(served, fast);
  const controller = new AbortController();
  const progressed = Promise.withResolvers<void>();
  const running = host.run(ask("wait"), model, {}, {
    signal: controller.signal,
    onProgress: () => progressed.resolve(),
  });
  await progressed.promise;
  controller.abort();
  assert.match(await code(running), /^cancelled/);
  assert.equal((await host.run(ask("fine"), model)).result.claim, "holds");
  const late = host.diagnostics.find((d) => d.kind === "late");
  assert.match(late?.line ?? "", /stopped: cancelled by the host/);
});

Deno.test("a serveEngine engine exits by itself when stdin closes", async () => {
  // A grace period long enough that only the engine's own exit, not SIGTERM, can end it.
  const host = await EngineHost.start(served, { ...fast, graceMs: 3000 });
  const status = await host.close();
  assert.equal(status.code, 0);
  assert.equal(status.signal, null);
  assert.equal(alive(host.pid), false);
});

Deno.test("a serveEngine engine reads a file on stdin too, answers each line and exits", async () => {
  // A file is not a pipe, so it takes the Deno.stdin path rather than node:net.
  const input = await Deno.makeTempFile({ suffix: ".jsonl" });
  try {
    await Deno.writeTextFile(
      input,
      [
        { jsonrpc: "2.0", id: 1, method: "describe", params: { protocols: [1] } },
        { jsonrpc: "2.0", id: 2, method: "run", params: {} },
      ].map((message) => JSON.stringify(message) + "\n").join(""),
    );
    // The shell's redirection gives the engine the file itself as stdin, not a pipe.
    const output = await new Deno.Command("sh", {
      args: ["-c", '"$0" run --quiet -A served.ts < "$1"', Deno.execPath(), input],
      cwd: served.cwd,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0);
    const lines = new TextDecoder().decode(output.stdout).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const byId = new Map(lines.map((l) => [l.id, l]));
    assert.equal(byId.get(1)?.result?.name, "served");
    assert.equal(byId.get(2)?.error?.code, "unsupported");
  } finally {
    await Deno.remove(input);
  }
});

Deno.test("a deadline a year ahead, written with lowercase t and z and a leap second, lets the run go on", async () => {
  // setTimeout overflows past 2^31-1 ms (24.8 days) and fires after 1 ms; both sides must wait.
  await using host = await EngineHost.start(served, fast);
  const year = new Date().getUTCFullYear() + 1;
  const deadline = `${year}-06-30t23:59:60z`;
  const controller = new AbortController();
  const progressed = Promise.withResolvers<void>();
  const running = host.run(ask("wait"), model, { deadline }, {
    signal: controller.signal,
    onProgress: () => progressed.resolve(),
  });
  let ended = "";
  running.then(() => ended = "resolved", (error) => ended = String(error));
  await Promise.race([progressed.promise, running.catch(() => {})]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(ended, "", "the run ended long before its deadline");
  controller.abort();
  assert.match(await code(running), /^cancelled/);
  await host.run(ask("fine"), model); // the engine's late answer has arrived by now
  const late = host.diagnostics.find((d) => d.kind === "late");
  assert.match(late?.line ?? "", /stopped: cancelled by the host/);
});
