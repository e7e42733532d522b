import assert from "node:assert/strict";
import { adjudicate, formatSchedule, parseSchedule, type Result } from "../../engine/mod.ts";

const context = {
  question: "holds" as const,
  authority: "proved" as const,
  witness: "schedule" as const,
};
const schedule =
  "step 1: read@alice first of read@alice, read@bob\nstep 2: read@bob first of read@bob";

Deno.test("a claim within every rule stands, with a reason", () => {
  const verdict = adjudicate({ claim: "holds", strength: "proved" }, context);
  assert.equal(verdict.strength, "proved");
  assert.equal(verdict.reason, "stands as claimed (proved)");
});

Deno.test("authority caps; an entry without authority caps at observed", () => {
  assert.equal(
    adjudicate({ claim: "holds", strength: "proved" }, { ...context, authority: "witnessed" })
      .strength,
    "witnessed",
  );
  const none = adjudicate({ claim: "holds", strength: "proved" }, { question: "holds" });
  assert.equal(none.strength, "observed");
  assert.match(none.reason, /not set/);
});

Deno.test("a reached bound, or a set bound not reported, caps at bounded", () => {
  const reached = adjudicate(
    { claim: "holds", strength: "proved", bounds: [{ name: "depth", limit: 5, reached: true }] },
    context,
  );
  assert.equal(reached.strength, "bounded");
  const unreported = adjudicate({ claim: "holds", strength: "proved" }, {
    ...context,
    bounds: [{ name: "steps", limit: 100 }, { name: "depth", limit: 0 }],
  });
  assert.equal(unreported.strength, "bounded");
  assert.match(unreported.reason, /whether bound steps was reached/);
});

Deno.test("existence claims need a well-formed witness of the entry's kind", () => {
  const violated = (witness?: Result["witness"]): Result => ({
    claim: "violated",
    strength: "witnessed",
    witness,
  });
  assert.equal(
    adjudicate(violated({ schedules: [schedule], at: 2 }), context).strength,
    "witnessed",
  );
  const cases: [Result["witness"], RegExp][] = [
    [undefined, /there is none/],
    [{ schedules: ["alice then bob"] }, /not in the replay format/],
    [{ schedules: ["step 2: a@b first of a@b"] }, /numbered 2, expected 1/],
    [{ schedules: ["step 1: a@b first of c@d"] }, /not among those enabled/],
    [{ schedules: [schedule], at: 3 }, /past its 2 steps/],
    [{ schedules: [schedule, schedule] }, /with 1 schedule/],
  ];
  for (const [witness, reason] of cases) {
    const verdict = adjudicate(violated(witness), context);
    assert.equal(verdict.strength, "observed", JSON.stringify(witness));
    assert.match(verdict.reason, reason);
  }
  const noWitnessKind = adjudicate(violated({ schedules: [schedule] }), {
    ...context,
    witness: "none",
  });
  assert.equal(noWitnessKind.strength, "observed");
  const sensitive = adjudicate(
    {
      claim: "sensitive",
      strength: "witnessed",
      witness: { schedules: [schedule, ""], feature: "balance" },
    },
    { ...context, question: "sensitive" },
  );
  assert.equal(sensitive.strength, "witnessed");
});

Deno.test("a claim that does not answer the question, or none, is not covered", () => {
  assert.equal(adjudicate({ claim: "table", strength: "proved" }, context).strength, "not covered");
  assert.equal(
    adjudicate({ claim: "none", strength: "observed" }, context).strength,
    "not covered",
  );
});

Deno.test("the replay format round-trips", () => {
  const parsed = parseSchedule(schedule);
  assert.ok(parsed.ok);
  assert.equal(parsed.ok && formatSchedule(parsed.steps), schedule);
  assert.deepEqual(parseSchedule(""), { ok: true, steps: [] });
});
