// The dev_tools group over real HTTP: run_code with real interpreters, git_status and git_diff
// with real git on real repositories, including a hostile one whose configuration tries to run
// programs.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

async function sh(cwd: string, script: string): Promise<void> {
  const out = await new Deno.Command("bash", {
    args: ["-ec", script],
    cwd,
    env: {
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

const hasPython = new Deno.Command("python3", { args: ["-V"], stdout: "null", stderr: "null" })
  .outputSync().success;

Deno.test("run_code: each language, errors, timeouts", async (t) => {
  await using server = await startTestServer();
  const cases: [string, string, string][] = [
    ["javascript", "console.log([1, 2, 3].map((x) => x * 2).join(','))", "2,4,6"],
    ["typescript", "const n: number = 6 * 7;\nconsole.log(`n=${n}`)", "n=42"],
    ["bash", "x=41; echo $((x + 1))", "42"],
    ["js", "console.log('alias')", "alias"],
  ];
  if (hasPython) cases.push(["python", "import sys\nprint(sys.version_info[0] * 14)", "42"]);
  for (const [language, code, text] of cases) {
    await t.step(language, async () => {
      const res = await server.post("/code/run", { code, language });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.text, text);
      assert.equal(body.stdout, `${text}\n`);
      assert.equal(body.exit_code, 0);
      assert.deepEqual(body.output_files, []);
      assert.ok(body.execution_time > 0);
    });
  }
  await t.step("python is the default language", async () => {
    if (!hasPython) return;
    const body = await (await server.post("/code/run", { code: "print('py')" })).json();
    assert.equal(body.language, "python");
    assert.equal(body.text, "py");
  });
  await t.step("a failing program: stderr, the error and its exit code", async () => {
    const res = await server.post("/code/run", {
      code: "console.error('boom'); throw new RangeError('bad')",
      language: "javascript",
    });
    const body = await res.json();
    assert.equal(body.exit_code, 1);
    assert.equal(body.error.name, "RangeError");
    assert.equal(body.error.value, "bad");
    assert.match(body.stderr, /^boom\n.*RangeError: bad/s);
    const status = await (await server.post("/code/run", {
      code: "(exit 3)",
      language: "bash",
    })).json();
    assert.equal(status.exit_code, 3, "a shell's status is its exit code");
    assert.equal(status.error, null);
  });
  await t.step("JavaScript runs with no permissions", async () => {
    await Deno.writeTextFile(`${server.root}/secret.txt`, "s3cret");
    const res = await server.post("/code/run", {
      code: `await Deno.readTextFile(${JSON.stringify(`${server.root}/secret.txt`)})`,
      language: "typescript",
    });
    const body = await res.json();
    assert.notEqual(body.exit_code, 0);
    assert.match(body.stderr, /NotCapable|Requires read access/);
    assert.ok(!body.stdout.includes("s3cret"));
    const env = await (await server.post("/code/run", {
      code: "Deno.env.get('HOME')",
      language: "javascript",
    })).json();
    assert.match(env.stderr, /Requires env access/);
  });
  await t.step("a timeout kills it and says so", async () => {
    const res = await server.post("/code/run", {
      code: "sleep 300",
      language: "bash",
      timeout: 1,
    });
    const body = await res.json();
    assert.equal(body.timed_out, true);
    assert.equal(body.exit_code, 124);
  });
  await t.step("env and cwd reach the program; cwd picks the default context", async () => {
    await Deno.mkdir(`${server.root}/work`);
    const res = await server.post("/code/run", {
      code: 'echo "$MODE $(pwd)"',
      language: "bash",
      env: { MODE: "fast" },
      cwd: "work",
    });
    const body = await res.json();
    const [mode, cwd] = body.text.split(" ");
    assert.equal(mode, "fast");
    assert.equal(cwd, `${await Deno.realPath(server.root)}/work`);
    const root = await (await server.post("/code/run", { code: "pwd", language: "bash" })).json();
    assert.equal(root.text, await Deno.realPath(server.root));
    assert.notEqual(root.context_id, body.context_id);
  });
  await t.step("bad bodies", async () => {
    const bad = [
      { language: "python" },
      { code: 1 },
      { code: "a\u0000b", language: "bash" },
      { code: "x", timeout: "1" },
      { code: "x", extra: 1 },
    ];
    for (const b of bad) {
      const res = await server.post("/code/run", b);
      assert.equal(res.status, 400, JSON.stringify(b));
      assert.equal((await res.json()).code, "invalid_arguments", JSON.stringify(b));
    }
  });
});

Deno.test("run_code guards: language_not_allowed, command rules on bash, env, cwd", async () => {
  await using server = await startTestServer({
    policy: { params: { languages: ["bash", "typescript"] }, deny_commands: ["rm"] },
  });
  await Deno.writeTextFile(`${server.root}/victim`, "here");
  const expect = async (body: unknown, status: number, code: string) => {
    const res = await server.post("/code/run", body);
    const got = await res.json();
    assert.equal(res.status, status, JSON.stringify([body, got]));
    assert.equal(got.code, code);
  };
  await expect({ code: "print(1)", language: "python" }, 403, "language_not_allowed");
  await expect({ code: "print(1)" }, 403, "language_not_allowed");
  await expect({ code: "puts 1", language: "ruby" }, 403, "language_not_allowed");
  await expect({ code: "echo a\nrm victim", language: "bash" }, 403, "command_not_allowed");
  await expect({ code: "true", language: "bash", env: { LD_PRELOAD: "x" } }, 403, "env_var_denied");
  await expect({ code: "true", language: "bash", env: { "A-B": "x" } }, 400, "env_invalid");
  await expect({ code: "true", language: "bash", cwd: "/etc" }, 403, "path_not_allowed");
  assert.equal(await Deno.readTextFile(`${server.root}/victim`), "here");
  const ok = await server.post("/code/run", { code: "console.log('ts ok')", language: "ts" });
  assert.equal((await ok.json()).text, "ts ok");
});

Deno.test("git_status and git_diff on a real repository", async (t) => {
  await using server = await startTestServer();
  const repo = `${server.root}/repo`;
  await Deno.mkdir(repo);
  await sh(
    repo,
    `git init -q -b main
    printf 'one\\n' > a.txt; printf 'x\\n' > b.txt; printf 'keep\\n' > c.txt
    git add . && git commit -qm init
    printf 'two\\n' >> a.txt
    git mv b.txt renamed.txt
    git rm -q c.txt
    printf 'new\\n' > untracked.txt`,
  );
  const real = await Deno.realPath(repo);
  await t.step("status", async () => {
    const res = await server.fetch(`/git/status?path=repo`);
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.repository, real);
    assert.equal(body.branch, "main");
    assert.match(body.head, /^[0-9a-f]{40}$/);
    assert.equal(body.upstream, null);
    assert.equal(body.clean, false);
    const byPath = Object.fromEntries(body.files.map((f: { path: string }) => [f.path, f]));
    assert.deepEqual(byPath["a.txt"], {
      path: "a.txt",
      index: ".",
      worktree: "M",
      status: "modified",
      staged: false,
    });
    assert.equal(byPath["renamed.txt"].status, "renamed");
    assert.equal(byPath["renamed.txt"].orig_path, "b.txt");
    assert.equal(byPath["renamed.txt"].staged, true);
    assert.equal(byPath["c.txt"].status, "deleted");
    assert.equal(byPath["untracked.txt"].status, "untracked");
    const sub = await (await server.fetch(`/git/status?path=repo/a.txt`)).json();
    assert.equal(sub.repository, real);
  });
  await t.step("diff: work tree, staged, against a ref, one file, truncated", async () => {
    const work = await (await server.fetch(`/git/diff?path=repo`)).json();
    assert.match(work.diff, /^diff --git a\/a.txt b\/a.txt\n/);
    assert.match(work.diff, /\n\+two\n/);
    assert.deepEqual(work.files, [{ path: "a.txt", additions: 1, deletions: 0, binary: false }]);
    assert.equal(work.truncated, false);
    const staged = await (await server.fetch(`/git/diff?path=repo&staged=true`)).json();
    const paths = staged.files.map((f: { path: string }) => f.path).sort();
    assert.deepEqual(paths, ["c.txt", "renamed.txt"]);
    const vsHead = await (await server.fetch(`/git/diff?path=repo&ref=HEAD`)).json();
    assert.equal(vsHead.files.length, 3);
    const one = await (await server.fetch(`/git/diff?path=repo&ref=HEAD&file=a.txt`)).json();
    assert.deepEqual(one.files.map((f: { path: string }) => f.path), ["a.txt"]);
    const cut = await (await server.fetch(`/git/diff?path=repo&max_bytes=10`)).json();
    assert.equal(cut.diff, "diff --git");
    assert.equal(cut.truncated, true);
  });
  await t.step("refusals", async () => {
    const cases: [string, number, string | undefined][] = [
      ["/git/status?path=/etc", 403, "path_not_allowed"],
      ["/git/diff?path=../", 403, "path_not_allowed"],
      ["/git/status?path=nope", 404, undefined],
      ["/git/status?path=.", 404, undefined],
      ["/git/diff?path=repo&ref=--output=/tmp/pwned", 400, "invalid_arguments"],
      ["/git/diff?path=repo&ref=no-such-branch", 400, "invalid_arguments"],
      ["/git/diff?path=repo&file=/etc/passwd", 403, "path_not_allowed"],
      ["/git/diff?path=repo&max_bytes=0", 400, "invalid_arguments"],
      ["/git/status?path=a%00b", 400, "invalid_path"],
    ];
    for (const [path, status, code] of cases) {
      const res = await server.fetch(path);
      const body = await res.json();
      assert.equal(res.status, status, `${path}: ${JSON.stringify(body)}`);
      if (code) assert.equal(body.code, code, path);
    }
  });
});

Deno.test("a hostile repository's configuration runs nothing", async () => {
  await using server = await startTestServer();
  const repo = `${server.root}/evil`;
  await Deno.mkdir(repo);
  const marker = `${server.root}/PWNED`;
  await sh(
    repo,
    `git init -q -b main
    printf 'x filter=evil diff=evil\\n' > .gitattributes
    printf 'hello\\n' > x
    git add . && git commit -qm init
    git config filter.evil.clean 'touch ${marker}.clean; cat'
    git config filter.evil.process 'touch ${marker}.process'
    git config diff.evil.command 'touch ${marker}.diff'
    git config diff.evil.textconv 'touch ${marker}.textconv; cat'
    printf 'changed\\n' > x`,
  );
  const status = await server.fetch(`/git/status?path=evil`);
  assert.equal(status.status, 200);
  assert.equal((await status.json()).files[0].path, "x");
  for (const q of ["", "&staged=true", "&ref=HEAD"]) {
    const diff = await server.fetch(`/git/diff?path=evil${q}`);
    assert.equal(diff.status, 200, q);
    await diff.body?.cancel();
  }
  const left = [...Deno.readDirSync(server.root)].map((e) => e.name).filter((n) =>
    n.startsWith("PWNED")
  );
  assert.deepEqual(left, []);
});

Deno.test("a repository reaching outside the allowed paths is refused", async () => {
  const outer = await Deno.makeTempDir({ prefix: "sandbar-git-outer-" });
  try {
    await sh(outer, "git init -q -b main && mkdir inner");
    await using server = await startTestServer({ root: `${outer}/inner` });
    const res = await server.fetch(`/git/status?path=.`);
    const body = await res.json();
    assert.equal(res.status, 403, JSON.stringify(body));
    assert.equal(body.code, "path_not_allowed");
  } finally {
    await Deno.remove(outer, { recursive: true });
  }
});
