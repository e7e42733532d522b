import assert from "node:assert/strict";
import {
  DescriptionSchema,
  EngineResponseSchema,
  HostMessageSchema,
  ResultSchema,
} from "../../engine/schema.ts";
import { check } from "../../engine/validate.ts";

const description = { name: "e", version: "1", protocol: 1, answers: ["holds"] };

Deno.test("objects reject unknown properties", () => {
  const checked = check(DescriptionSchema, { ...description, colour: "red" }, "result");
  assert.equal(checked.ok, false);
  assert.match(!checked.ok ? checked.message : "", /Unrecognized key: "colour"/);
});

Deno.test("model forms: sources, rdf and graphs:<n> without a leading zero", () => {
  for (const form of ["sources", "rdf", "graphs:1", "graphs:12"]) {
    assert.equal(check(DescriptionSchema, { ...description, model: [form] }, "d").ok, true, form);
  }
  for (const form of ["graphs:0", "graphs:01", "graphs:", "graphs:1.5", "turtle"]) {
    assert.equal(check(DescriptionSchema, { ...description, model: [form] }, "d").ok, false, form);
  }
});

Deno.test("a response carries exactly one of result and error", () => {
  const error = { code: "internal", message: "x" };
  assert.equal(check(EngineResponseSchema, { jsonrpc: "2.0", id: 1, result: {} }, "r").ok, true);
  assert.equal(check(EngineResponseSchema, { jsonrpc: "2.0", id: 1, error }, "r").ok, true);
  assert.equal(check(EngineResponseSchema, { jsonrpc: "2.0", id: 1 }, "r").ok, false);
  assert.equal(
    check(EngineResponseSchema, { jsonrpc: "2.0", id: 1, result: {}, error }, "r").ok,
    false,
  );
  assert.equal(check(EngineResponseSchema, { jsonrpc: "2.0", id: 0, result: {} }, "r").ok, false);
  assert.equal(check(EngineResponseSchema, { jsonrpc: "1.0", id: 1, result: {} }, "r").ok, false);
});

Deno.test("integer minimums and RFC 3339 deadlines in run params", () => {
  const run = (budget: unknown, bounds: unknown = []) => ({
    jsonrpc: "2.0",
    id: 1,
    method: "run",
    params: {
      question: { kind: "holds", subject: "s", schedule: "all", free: [] },
      model: {},
      bounds,
      budget,
    },
  });
  assert.equal(check(HostMessageSchema, run({ deadline: "2030-01-01T00:00:00Z" }), "m").ok, true);
  assert.equal(
    check(HostMessageSchema, run({ deadline: "2030-01-01T00:00:00+02:00" }), "m").ok,
    true,
  );
  assert.equal(check(HostMessageSchema, run({ deadline: "2030-01-01" }), "m").ok, false);
  // RFC 3339 5.6: either case of T and Z, and a leap second.
  for (
    const deadline of ["2030-01-01t00:00:00z", "2016-12-31T23:59:60Z", "2030-01-01T00:00:00.5z"]
  ) {
    assert.equal(check(HostMessageSchema, run({ deadline }), "m").ok, true, deadline);
  }
  for (const deadline of ["2030-02-30T00:00:00Z", "2030-01-01T00:00:61Z", "2030-01-01 00:00:00Z"]) {
    assert.equal(check(HostMessageSchema, run({ deadline }), "m").ok, false, deadline);
  }
  assert.equal(check(HostMessageSchema, run({ depth: -1 }), "m").ok, false);
  assert.equal(check(HostMessageSchema, run({ depth: 1.5 }), "m").ok, false);
  assert.equal(check(HostMessageSchema, run({}, [{ name: "depth", limit: 3 }]), "m").ok, true);
});

Deno.test("graph nodes keep the fields the contract leaves to the engine", () => {
  const node = { name: "a", kind: "process", steps: [{ token: "t" }] };
  const message = {
    jsonrpc: "2.0",
    id: 2,
    method: "covers",
    params: {
      question: { kind: "holds", subject: "a", schedule: "all", free: ["schedule"] },
      model: { graphs: { version: 1, subject: "a", actions: [node] } },
    },
  };
  const checked = check(HostMessageSchema, message, "m");
  assert.ok(checked.ok);
  assert.deepEqual(
    checked.ok && checked.value.method === "covers" && checked.value.params.model.graphs?.actions,
    [node],
  );
});

Deno.test("results: claim and strength enums, elapsed minimum", () => {
  assert.equal(check(ResultSchema, { claim: "holds", strength: "proved" }, "r").ok, true);
  assert.equal(check(ResultSchema, { claim: "maybe", strength: "proved" }, "r").ok, false);
  assert.equal(check(ResultSchema, { claim: "holds", strength: "sure" }, "r").ok, false);
  assert.equal(
    check(ResultSchema, { claim: "holds", strength: "proved", elapsed: -1 }, "r").ok,
    false,
  );
});
