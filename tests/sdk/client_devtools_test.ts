/**
 * client.devtools against the real server: code in every language, and real git.
 */

import assert from "node:assert/strict";
import { FilePolicyDeniedError, PolicyDeniedError, ServerClient } from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("devtools.runCode: python, javascript, typescript, bash; failures and timeouts", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const py = await client.devtools.runCode("print(6 * 7)");
  assert.deepEqual([py.text, py.stdout, py.exitCode, py.language], ["42", "42\n", 0, "python"]);
  assert.deepEqual(py.outputFiles, []);
  assert.equal(py.value, undefined, "print is a statement: no value");
  // E2B's quickstart: its `execution.text` (the last expression's value) is `value` here.
  const counted = await client.devtools.runCode("x = 1\nx += 1; x");
  assert.deepEqual([counted.text, counted.value], ["", "2"]);
  const js = await client.devtools.runCode("console.log([1, 2].map((x) => x * 2).join(','))", {
    language: "javascript",
  });
  assert.equal(js.text, "2,4");
  const ts = await client.devtools.runCode("const n: number = 7; console.log(n * 6)", {
    language: "typescript",
  });
  assert.equal(ts.text, "42");
  const sh = await client.devtools.runCode("echo $((2 ** 10))", { language: "bash" });
  assert.equal(sh.text, "1024");
  const failed = await client.devtools.runCode("raise SystemExit(5)");
  assert.equal(failed.exitCode, 5);
  const slow = await client.devtools.runCode("import time; time.sleep(10)", { timeout: 1 });
  assert.deepEqual([slow.timedOut, slow.exitCode], [true, 124]);
});

Deno.test("devtools.runCode: a language outside params.languages is a PolicyDeniedError", async () => {
  await using server = await startTestServer({ policy: { params: { languages: ["bash"] } } });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.devtools.runCode("print(1)"), (e) => {
    assert.ok(e instanceof PolicyDeniedError);
    assert.equal(e.serverCode, "language_not_allowed");
    return true;
  });
  const caps = await client.discover();
  assert.deepEqual(caps.param("run_code", "languages"), ["bash"]);
});

Deno.test("devtools.gitStatus and gitDiff on a real repository", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const setup = await client.process.shell(
    [
      "git init -q -b main app",
      "cd app",
      "git config user.email t@example.com && git config user.name t",
      "printf 'one\\n' > a.txt && git add a.txt && git commit -qm first",
      "printf 'two\\n' >> a.txt && printf 'new\\n' > b.txt",
    ].join(" && "),
  );
  assert.equal(setup.exitCode, 0, setup.stderr);
  const status = await client.devtools.gitStatus("app");
  assert.equal(status.repository, `${server.root}/app`);
  assert.equal(status.branch, "main");
  assert.equal(status.clean, false);
  const byPath = Object.fromEntries(status.files.map((f) => [f.path, f.status]));
  assert.deepEqual(byPath, { "a.txt": "modified", "b.txt": "untracked" });
  const diff = await client.devtools.gitDiff({ path: "app" });
  assert.match(diff.diff, /\+two/);
  assert.deepEqual(diff.files, [{ path: "a.txt", additions: 1, deletions: 0, binary: false }]);
  assert.equal(diff.truncated, false);
  await assert.rejects(client.devtools.gitStatus("/etc"), FilePolicyDeniedError);
});
