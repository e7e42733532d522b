import assert from "node:assert/strict";
import { EngineError, EngineHost } from "../../engine/mod.ts";
import { alive, fast, model, question, rogue } from "./helpers.ts";

async function rejection(promise: Promise<unknown>): Promise<EngineError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof EngineError, `expected an EngineError, got ${error}`);
    return error;
  }
  assert.fail("expected the call to fail");
}

Deno.test("a well-behaved engine: handshake, covers, run with the entry's bounds, verdict", async () => {
  const host = await EngineHost.start(rogue("good"), fast);
  try {
    assert.equal(host.description.name, "rogue");
    assert.deepEqual(await host.covers(question, model), { covers: true });
    const outcome = await host.run(question, model, { depth: 3, steps: 50 });
    assert.deepEqual(outcome.bounds, [{ name: "depth", limit: 3 }]);
    assert.equal(outcome.verdict.strength, "bounded");
    assert.equal(host.pollutingStdout, false);
  } finally {
    const status = await host.close();
    assert.equal(status.code, 0);
    assert.equal(alive(host.pid), false);
  }
});

Deno.test("a Description that differs from the entry is refused, naming each field", async () => {
  const error = await rejection(EngineHost.start(rogue("mismatch"), fast));
  assert.equal(error.code, "refused");
  assert.match(error.message, /answers: .*unexpected sweep/);
  assert.match(error.message, /bounds: .*missing depth/);
  assert.match(error.message, /authority: the manifest says bounded, the engine says proved/);
});

Deno.test("logging on stdout is recorded with the engine's name and dropped", async () => {
  await using host = await EngineHost.start(rogue("stdout-log"), fast);
  const outcome = await host.run(question, model, { depth: 3 });
  assert.equal(outcome.result.claim, "holds");
  assert.equal(host.pollutingStdout, true);
  const lines = host.diagnostics.map((d) => `${d.engine} ${d.kind} ${d.line}`);
  assert.ok(
    lines.includes("rogue-stdout-log pollution DEBUG: running the model"),
    lines.join("\n"),
  );
});

Deno.test("an overlong line is dropped without hurting the next message", async () => {
  await using host = await EngineHost.start(rogue("overlong"), { ...fast, maxLineBytes: 1 << 20 });
  const outcome = await host.run(question, model, { depth: 3 });
  assert.equal(outcome.result.claim, "holds");
  const overlong = host.diagnostics.find((d) => d.kind === "overlong");
  assert.match(overlong?.detail ?? "", /2000\d+ bytes/);
});

Deno.test("a partial line then exit fails the run at once with the exit status", async () => {
  await using host = await EngineHost.start(rogue("partial"), fast);
  const error = await rejection(host.run(question, model, { depth: 3 }));
  assert.equal(error.code, "exited");
  assert.match(error.message, /exited with code 0/);
  assert.ok(host.diagnostics.some((d) => d.kind === "partial"));
});

Deno.test("a response to an id never sent is fatal for every request", async () => {
  await using host = await EngineHost.start(rogue("wrong-id"), fast);
  const error = await rejection(host.run(question, model, { depth: 3 }));
  assert.equal(error.code, "protocol");
  assert.match(error.message, /answered request 102, which the host never sent/);
  assert.equal((await rejection(host.covers(question, model))).code, "protocol");
});

Deno.test("a response with both result and error fails its request", async () => {
  await using host = await EngineHost.start(rogue("both"), fast);
  const error = await rejection(host.run(question, model, { depth: 3 }));
  assert.equal(error.code, "protocol");
  assert.match(error.message, /exactly one of result and error/);
  assert.equal(host.pollutingStdout, true);
});

Deno.test("a result with an extra property fails validation, naming it", async () => {
  await using host = await EngineHost.start(rogue("extra"), fast);
  const error = await rejection(host.run(question, model, { depth: 3 }));
  assert.equal(error.code, "protocol");
  assert.match(error.message, /result: Unrecognized key: "confidence"/);
});

Deno.test("a claim above the entry's authority is capped, with the reason", async () => {
  await using host = await EngineHost.start(rogue("over-authority"), fast);
  const { verdict } = await host.run(question, model, { depth: 3 });
  assert.equal(verdict.claimed, "proved");
  assert.equal(verdict.strength, "bounded");
  assert.match(verdict.reason, /authority is bounded/);
});

Deno.test("a witness in the wrong format leaves the claim at observed", async () => {
  await using host = await EngineHost.start(rogue("bad-witness"), fast);
  const { verdict } = await host.run(question, model, { depth: 3 });
  assert.equal(verdict.claim, "violated");
  assert.equal(verdict.strength, "observed");
  assert.match(verdict.reason, /not in the replay format/);
});

Deno.test("progress reaches the caller; progress after the answer does not", async () => {
  await using host = await EngineHost.start(rogue("progress"), fast);
  const seen: number[] = [];
  await host.run(question, model, {}, { onProgress: (p) => seen.push(p.steps ?? -1) });
  assert.deepEqual(seen, [10, 20, 30]);
  await host.covers(question, model); // the late progress has arrived by the next answer
  assert.ok(host.diagnostics.some((d) => d.kind === "late" && d.line?.includes("999")));
});

Deno.test("an engine that dies mid-run fails the run with its exit code and stderr", async () => {
  await using host = await EngineHost.start(rogue("die"), fast);
  const error = await rejection(host.run(question, model, { depth: 3 }));
  assert.equal(error.code, "exited");
  assert.match(error.message, /exited with code 3/);
  assert.match(error.message, /out of memory while exploring/);
  assert.equal(alive(host.pid), false);
});

Deno.test("a flood on stderr is drained, and only its tail is kept", async () => {
  await using host = await EngineHost.start(rogue("stderr-flood"), { ...fast, stderrBytes: 4096 });
  const outcome = await host.run(question, model, { depth: 3 });
  assert.equal(outcome.result.claim, "holds");
  assert.ok(host.stderrTail().length <= 4096);
  assert.match(host.stderrTail(), /noise line 1999/);
});

Deno.test("ignoring cancel, stdin close and SIGTERM ends in SIGKILL after the deadline", async () => {
  const host = await EngineHost.start(rogue("ignore-cancel"), fast);
  const deadline = new Date(Date.now() + 200).toISOString();
  const error = await rejection(host.run(question, model, { depth: 3, deadline }));
  assert.equal(error.code, "deadline");
  const status = await host.close();
  assert.equal(status.signal, "SIGKILL");
  assert.equal(alive(host.pid), false);
});

Deno.test("an engine that does not exit when stdin closes is ended by SIGTERM", async () => {
  const host = await EngineHost.start(rogue("linger"), fast);
  const status = await host.close();
  assert.equal(status.signal, "SIGTERM");
  assert.equal(alive(host.pid), false);
});

Deno.test("cancel rejects at once and a late answer never counts", async () => {
  // A grace far beyond the engine's 100 ms answer: on a loaded machine a 200 ms grace ran out
  // first and the host stopped the engine, which is not what this test is about.
  await using host = await EngineHost.start(rogue("slow"), { ...fast, graceMs: 10_000 });
  const controller = new AbortController();
  const running = host.run(question, model, {}, { signal: controller.signal });
  controller.abort();
  assert.equal((await rejection(running)).code, "cancelled");
  // The slot is freed by the engine's late answer, so the next run goes through.
  const next = await host.run(question, model, {});
  assert.equal(next.result.claim, "holds");
  assert.ok(host.diagnostics.some((d) => d.kind === "late" && /cancelled request/.test(d.detail)));
});

Deno.test("requests queue one at a time unless the Description says concurrent", async () => {
  for (const [mode, expected] of [["slow", "max in flight 1"], ["concurrent", "max in flight 4"]]) {
    await using host = await EngineHost.start(rogue(mode), fast);
    const runs = await Promise.all([1, 2, 3, 4].map(() => host.run(question, model, {})));
    assert.equal(runs.at(-1)!.result.reason, expected, mode);
  }
});

Deno.test("a command that does not exist fails with code spawn", async () => {
  const error = await rejection(
    EngineHost.start(rogue("good", { command: ["/nonexistent/engine"] }), fast),
  );
  assert.equal(error.code, "spawn");
});

Deno.test("the host refuses a graph version it does not serve before sending anything", async () => {
  await using host = await EngineHost.start(rogue("good"), fast);
  const error = await rejection(host.run(question, { graphs: { version: 2, subject: "x" } }));
  assert.equal(error.code, "invalid");
  assert.match(error.message, /none of the forms the engine takes \(graphs:1\)/);
});

Deno.test("a run that hears nothing for the idle time fails with timeout", async () => {
  const host = await EngineHost.start(rogue("ignore-cancel"), fast);
  const error = await rejection(host.run(question, model, { depth: 3 }, { idleMs: 150 }));
  assert.equal(error.code, "timeout");
  assert.match(error.message, /heard nothing for 150 ms/);
  await host.close();
  assert.equal(alive(host.pid), false);
});

Deno.test("an engine whose Description names another engine or version is refused", async () => {
  const named = await rejection(EngineHost.start(rogue("good", { describedName: "bar" }), fast));
  assert.equal(named.code, "refused");
  assert.match(named.message, /name: the manifest says bar, the engine says rogue/);
  const keyed = await rejection(
    EngineHost.start(rogue("good", { describedName: undefined }), fast),
  );
  assert.match(keyed.message, /name: the manifest says rogue-good, the engine says rogue/);
  const versioned = await rejection(EngineHost.start(rogue("good", { version: "^2.0.0" }), fast));
  assert.match(
    versioned.message,
    /version: the manifest accepts \^2\.0\.0, the engine says 1\.0\.0/,
  );
  for (const version of ["1.0.0", "^1.0.0", ">=0.9 <2"]) {
    await using host = await EngineHost.start(rogue("good", { version }), fast);
    assert.equal(host.description.version, "1.0.0");
  }
});
