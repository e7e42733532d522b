// The guards of the process group over real HTTP: command rules on every simple command of a
// shell string and on argv, the environment guard, and the path guard on cwd. A refused
// command must not run: each hostile string below targets a real file that must survive.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

async function expectCode(res: Response, status: number, code: string, note = ""): Promise<void> {
  const body = await res.json();
  assert.equal(res.status, status, `${note}: ${JSON.stringify(body)}`);
  assert.equal(body.code, code, note);
}

// Each runs `rm` (denied) against ./victim in some disguise.
const HIDDEN_RM = [
  "rm victim",
  "echo ok; rm victim",
  "true && rm victim",
  "false || rm victim",
  "echo victim | xargs rm",
  "cat /dev/null | rm victim",
  "echo $(rm victim)",
  "echo `rm victim`",
  'echo "$(rm victim)"',
  "(rm victim)",
  "{ rm victim; }",
  "true &\nrm victim",
  "env X=1 rm victim",
  "env -i rm victim",
  "command rm victim",
  "exec rm victim",
  "/usr/bin/rm victim",
  "/bin/rm victim",
  "'rm' victim",
  '"rm" victim',
  "r\\m victim",
  "r''m victim",
  "nohup rm victim",
  "timeout 5 rm victim",
  "nice -n 5 rm victim",
  "sudo rm victim",
  "bash -c 'rm victim'",
  'sh -c "rm victim"',
  "eval 'rm victim'",
  "if true; then rm victim; fi",
  "for f in victim; do rm $f; done",
  "while true; do rm victim; break; done",
  "case x in x) rm victim;; esac",
  "f() { rm victim; }; f",
  "function g { rm victim; }; g",
  "cat <(rm victim)",
  "x=$(rm victim) true",
  "echo ${x:-$(rm victim)}",
  "cat <<EOF\n$(rm victim)\nEOF",
  "find . -name victim -exec rm {} \\;",
  "trap 'rm victim' EXIT",
  "$(echo rm) victim",
  "{r,}m victim",
  "/usr/bin/r? victim",
  "p=rm; $p victim",
  "alias x=rm",
  "echo x > $(rm victim)",
];

Deno.test("command_not_allowed: a denied program is refused wherever it hides, and never runs", async () => {
  await using server = await startTestServer({ policy: { deny_commands: ["rm"] } });
  await Deno.writeTextFile(`${server.root}/victim`, "still here");
  for (const cmd of HIDDEN_RM) {
    for (const path of ["/process/shell", "/process/shell/stream", "/process/start"]) {
      await expectCode(await server.post(path, { cmd }), 403, "command_not_allowed", cmd);
    }
  }
  assert.equal(await Deno.readTextFile(`${server.root}/victim`), "still here");
  // Words that only look like rm run.
  for (
    const cmd of [
      "echo rm victim",
      "echo 'rm victim; $(rm x)'",
      "echo rm | grep rm",
      "echo $((1+2))",
    ]
  ) {
    const res = await server.post("/process/shell", { cmd });
    assert.equal(res.status, 200, cmd);
    assert.equal((await res.json()).exit_code, 0, cmd);
  }
  assert.equal(await Deno.readTextFile(`${server.root}/victim`), "still here");
});

Deno.test("allow_commands: only listed programs and harmless builtins run", async () => {
  await using server = await startTestServer({ policy: { allow_commands: ["ls", "cat", "grep"] } });
  await Deno.writeTextFile(`${server.root}/a.txt`, "alpha\nbeta\n");
  const ok = [
    "ls",
    "cat a.txt | grep beta",
    "cd . && ls > /dev/null 2>&1; echo done",
    "/usr/bin/cat a.txt",
    "for i in 1 2; do echo $i; done",
    "[[ -f a.txt ]] && cat a.txt",
  ];
  for (const cmd of ok) {
    const res = await server.post("/process/shell", { cmd });
    const body = await res.json();
    assert.equal(res.status, 200, `${cmd}: ${JSON.stringify(body)}`);
    assert.equal(body.exit_code, 0, cmd);
  }
  const refused = [
    "curl http://127.0.0.1/",
    "ls; touch made",
    "./ls",
    "/tmp/cat a.txt",
    "env ls",
    "bash -c ls",
    "PATH=/tmp ls",
    "export PATH=/tmp:$PATH; ls",
    "source a.txt",
    "cat $(touch made)",
  ];
  for (const cmd of refused) {
    await expectCode(
      await server.post("/process/shell", { cmd }),
      403,
      "command_not_allowed",
      cmd,
    );
  }
  await assert.rejects(Deno.stat(`${server.root}/made`), Deno.errors.NotFound);
  // With command rules in force, the env map may not change what a name runs.
  await expectCode(
    await server.post("/process/shell", { cmd: "ls", env: { PATH: "/tmp" } }),
    403,
    "env_var_denied",
  );
  await expectCode(
    await server.post("/process/shell", { cmd: "ls", env: { BASH_ENV: "a.txt" } }),
    403,
    "env_var_denied",
  );
});

Deno.test("command_invalid, process_invalid and process_denied", async () => {
  await using server = await startTestServer({ policy: { deny_commands: ["rm"] } });
  const invalid: unknown[] = [
    {},
    { cmd: "" },
    { cmd: "   \n" },
    { cmd: 42 },
    { cmd: "echo a\u0000b" },
    { cmd: "echo 'unterminated" },
    { cmd: "echo ) x" },
    { cmd: "ls", argv: ["ls"] },
  ];
  for (const body of invalid) {
    await expectCode(
      await server.post("/process/shell", body),
      400,
      "command_invalid",
      JSON.stringify(body),
    );
  }
  const badArgv: unknown[] = [[], [""], [1], ["ls", 2], ["ls\u0000"], ["no-such-program-xyz"]];
  for (const argv of badArgv) {
    await expectCode(
      await server.post("/process/shell", { argv }),
      400,
      "process_invalid",
      JSON.stringify(argv),
    );
  }
  for (const argv of [["rm", "x"], ["/usr/bin/rm", "x"], ["env", "rm"], ["bash", "-c", "rm x"]]) {
    await expectCode(
      await server.post("/process/start", { argv }),
      403,
      "process_denied",
      argv.join(" "),
    );
  }
  const res = await server.post("/process/shell", { argv: ["echo", "a b", "$HOME"] });
  assert.equal((await res.json()).stdout, "a b $HOME\n");
});

Deno.test("env guard: env_var_denied, env_var_not_allowed, env_invalid", async (t) => {
  await t.step("LD_PRELOAD and the server's own variables are refused by default", async () => {
    await using server = await startTestServer();
    for (
      const name of [
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "SVC_SERVER_TOKEN",
        "SANDBAR_X",
      ]
    ) {
      await expectCode(
        await server.post("/process/shell", { cmd: "true", env: { [name]: "x" } }),
        403,
        "env_var_denied",
        name,
      );
    }
    const invalid: unknown[] = [
      "A=1",
      ["A"],
      { "A=B": "1" },
      { "": "1" },
      { "1A": "1" },
      { "A B": "1" },
      { "A\u0000": "1" },
      { A: 1 },
      { A: null },
      { A: "x\u0000y" },
    ];
    for (const env of invalid) {
      await expectCode(
        await server.post("/process/start", { cmd: "true", env }),
        400,
        "env_invalid",
        JSON.stringify(env),
      );
    }
    const res = await server.post("/process/shell", {
      cmd: 'echo "$GREETING"',
      env: { GREETING: "hé" },
    });
    assert.equal((await res.json()).stdout, "hé\n");
  });
  await t.step("env.allow: names not on it are env_var_not_allowed; deny still wins", async () => {
    await using server = await startTestServer({
      policy: { env: { allow: ["APP_*", "DEBUG", "LD_PRELOAD"] } },
    });
    await expectCode(
      await server.post("/process/shell", { cmd: "true", env: { OTHER: "1" } }),
      403,
      "env_var_not_allowed",
    );
    await expectCode(
      await server.post("/process/shell", { cmd: "true", env: { LD_PRELOAD: "x" } }),
      403,
      "env_var_denied",
    );
    const res = await server.post("/process/shell", {
      cmd: "echo $APP_MODE$DEBUG",
      env: { APP_MODE: "a", DEBUG: "1" },
    });
    assert.equal((await res.json()).stdout, "a1\n");
  });
});

Deno.test("cwd is a guarded path", async () => {
  await using server = await startTestServer();
  await Deno.mkdir(`${server.root}/sub`);
  await Deno.writeTextFile(`${server.root}/file`, "");
  const res = await server.post("/process/shell", { cmd: "pwd", cwd: "sub" });
  assert.equal((await res.json()).stdout, `${await Deno.realPath(server.root)}/sub\n`);
  for (const cwd of ["/etc", "..", "sub/../../", "/"]) {
    for (const path of ["/process/shell", "/process/shell/stream", "/process/start"]) {
      await expectCode(await server.post(path, { cmd: "pwd", cwd }), 403, "path_not_allowed", cwd);
    }
  }
  await expectCode(
    await server.post("/process/shell", { cmd: "pwd", cwd: "nope" }),
    400,
    "invalid_path",
  );
  await expectCode(
    await server.post("/process/shell", { cmd: "pwd", cwd: "file" }),
    400,
    "invalid_path",
  );
  await expectCode(
    await server.post("/process/shell", { cmd: "pwd", cwd: "a\u0000" }),
    400,
    "invalid_path",
  );
});

Deno.test("bodies: unknown keys and wrong types are invalid_arguments, non-JSON invalid_request", async () => {
  await using server = await startTestServer();
  await expectCode(
    await server.post("/process/shell", { cmd: "true", shell: "zsh" }),
    400,
    "invalid_arguments",
  );
  await expectCode(
    await server.post("/process/shell", { cmd: "true", timeout: -1 }),
    400,
    "invalid_arguments",
  );
  await expectCode(
    await server.post("/process/start", { cmd: "true", stdin: "x" }),
    400,
    "invalid_arguments",
  );
  const res = await server.fetch("/process/shell", { method: "POST", body: "{nope" });
  await expectCode(res, 400, "invalid_request");
});
