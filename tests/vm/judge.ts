/**
 * Judging a run in the VM as one test of the host's suite: every test it was meant to run ran
 * there and passed (one ignored or missing there fails here, since the VM has what they need),
 * and what the VM printed comes back only with a failure, each line marked `vm| `, so that no
 * line of the VM's own test run reads as a line of the host's (its summary, above all).
 *
 * @module
 */

import assert from "node:assert/strict";
import { junitOutcomes } from "./junit.ts";
import { runTestsInVm } from "./run.ts";

/** What to run in the VM and what must have passed there. */
export interface VmSuite {
  /** Test files, relative to the repository. */
  files: string[];
  /** The names of the tests that must run and pass; others the files hold are not judged. */
  expected: string[];
  /** Names that must pass when they run (a prefix each), though none is required by name. */
  expectedPrefixes?: string[];
  /** More `deno test` flags (`--filter`). */
  denoArgs?: string[];
}

const MINUTES = 25;

/** The last lines of `text`, each marked as the VM's. */
function vmTail(text: string): string {
  return text.split("\n").slice(-60).map((line) => `vm| ${line}`).join("\n");
}

/**
 * Run `suite` in the VM and assert it passed; the number of tests that passed there.
 */
export async function assertPassedInVm(suite: VmSuite): Promise<number> {
  const r = await runTestsInVm(suite.files, {
    timeoutMs: MINUTES * 60_000,
    denoArgs: ["--no-check", ...(suite.denoArgs ?? [])],
  });
  const printed = () => `${vmTail(r.log)}\n${vmTail(r.console)}`;
  assert.ok(!r.timedOut, `the VM was killed after ${MINUTES} min\n${printed()}`);
  assert.ok(r.junit !== null, `no test report from the VM\n${printed()}`);
  const judged = (name: string) =>
    suite.expected.includes(name) || (suite.expectedPrefixes ?? []).some((p) => name.startsWith(p));
  // The report lists the tests a filter left out as skipped: judge only those that were meant.
  const outcomes = junitOutcomes(r.junit).filter((t) => judged(t.name));
  const bad = outcomes.filter((t) => t.status !== "passed");
  assert.deepEqual(
    bad.map((t) => `${t.name}: ${t.status}${t.failure ? `\n${t.failure}` : ""}`),
    [],
    vmTail(r.log),
  );
  const ran = new Set(outcomes.map((t) => t.name));
  for (const name of suite.expected) assert.ok(ran.has(name), `did not run in the VM: ${name}`);
  assert.equal(r.code, 0, vmTail(r.log));
  console.log(`in the VM: ${outcomes.length} tests passed, ${r.seconds.toFixed(0)} s in all`);
  return outcomes.length;
}
