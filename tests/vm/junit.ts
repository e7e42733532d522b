/**
 * The outcome of each test in a `deno test --junit-path` report: how a run inside the test VM is
 * judged test by test (a test ignored there is as telling as one failed: it did not run).
 *
 * @module
 */

/** One test's outcome. */
export interface TestOutcome {
  /** The file, as Deno names it (`./tests/sdk/x_test.ts`). */
  file: string;
  /** The test's name. */
  name: string;
  /** What happened to it. */
  status: "passed" | "failed" | "ignored";
  /** The failure's text, for a failed test. */
  failure?: string;
}

function unescape(text: string): string {
  return text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"')
    .replaceAll("&apos;", "'").replaceAll("&amp;", "&");
}

/**
 * Each test case of Deno's JUnit report, in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { junitOutcomes } from "./junit.ts";
 * const xml = `<testsuite name="./a_test.ts">
 *   <testcase name="one &amp; two" classname="./a_test.ts" time="0.001">
 *   </testcase>
 *   <testcase name="skip" classname="./a_test.ts" time="0.000"><skipped/></testcase>
 *   <testcase name="bad" classname="./a_test.ts" time="0.1">
 *     <failure message="x">Error: boom &lt;x&gt;</failure>
 *   </testcase>
 * </testsuite>`;
 * assert.deepEqual(junitOutcomes(xml).map((t) => [t.name, t.status]), [
 *   ["one & two", "passed"],
 *   ["skip", "ignored"],
 *   ["bad", "failed"],
 * ]);
 * assert.equal(junitOutcomes(xml)[2].failure, "Error: boom <x>");
 * ```
 */
export function junitOutcomes(xml: string): TestOutcome[] {
  const found: TestOutcome[] = [];
  const cases = /<testcase name="([^"]*)" classname="([^"]*)"[^>]*>([^]*?)<\/testcase>/g;
  for (const [, name, file, body] of xml.matchAll(cases)) {
    const failure = /<failure[^>]*>([^]*?)<\/failure>/.exec(body);
    found.push({
      file: unescape(file),
      name: unescape(name),
      status: failure ? "failed" : /<skipped\s*\/>/.test(body) ? "ignored" : "passed",
      ...(failure ? { failure: unescape(failure[1]) } : {}),
    });
  }
  return found;
}
