/**
 * Command rules held by the kernel: bypasses of the `allow_commands` string guard (a carriage
 * return before `#`, array subscripts evaluated by allowed builtins, the environment changed
 * from inside the command string) and programs that call `execve` themselves. Each attack tries
 * to create a marker file; success is judged by the marker alone. The same attacks run against a
 * server with the confinement off, to show the markers would appear without it.
 */

import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { exists } from "../helpers/fs.ts";

async function post(server: TestServer, path: string, body: unknown) {
  const res = await server.fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const ALLOW = ["echo", "cat", "ls", "true", "python3"];

/** Attacks on the string guard; `M` is the marker's path. */
function attacks(m: string): Record<string, string> {
  const sub = `X='a[$(touch ${m})]'`;
  return {
    "carriage return before #": `true; echo x\r#; touch ${m}`,
    "indirect expansion": `${sub}; echo \${!X}`,
    "arithmetic": `${sub}; echo $((X))`,
    "[[ -eq ]]": `${sub}; [[ $X -eq 0 ]]`,
    "declare": `${sub}; declare -i Y=X`,
    "read into a subscript": `echo 1 | read 'a[$(touch ${m})]'`,
    "printf -v": `printf -v 'a[$(touch ${m})]' x`,
    "test -v": `test -v 'a[$(touch ${m})]'`,
    "let": `${sub}; let Y=X`,
    "python os.execv": `python3 -c "import os; os.execv('/usr/bin/touch', ['touch', '${m}'])"`,
    "python os.system": `python3 -c "import os; os.system('touch ${m}')"`,
    "python subprocess": `python3 -c "import subprocess; subprocess.run(['touch', '${m}'])"`,
    "declare -n PATH": `declare -n L=PATH; L=$PWD/bin; export L; ls`,
    "export of a computed name": `N=PATH; export "$N=$PWD/bin"; ls`,
  };
}

/** `bin/ls` in the root: a program outside the list, which the PATH attacks reach. */
async function plantLs(root: string, marker: string): Promise<void> {
  await Deno.mkdir(`${root}/bin`, { recursive: true });
  await Deno.writeTextFile(`${root}/bin/ls`, `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
}

Deno.test("allow_commands: what gets past the string guard still cannot start a program", async () => {
  for (const confined of [true, false]) {
    await using server = await startTestServer({
      policy: { allow_commands: ALLOW },
      env: confined ? {} : { SANDBAR_CONFINEMENT: "off" },
    });
    const created: string[] = [];
    for (const [name, cmd] of Object.entries(attacks(`${server.root}/M`))) {
      const marker = `${server.root}/M`;
      await plantLs(server.root, marker);
      const r = await post(server, "/process/shell", { cmd });
      assert.ok([200, 403].includes(r.status), `${name}: ${JSON.stringify(r.body)}`);
      if (exists(marker)) created.push(name);
      await Deno.remove(marker).catch(() => {});
    }
    if (confined) assert.deepEqual(created, [], "the kernel ran none of them");
    // Without the kernel, at least the subscript and python attacks do run a program.
    else {
      for (
        const name of [
          "indirect expansion",
          "arithmetic",
          "read into a subscript",
          "python os.execv",
        ]
      ) {
        assert.ok(created.includes(name), `${name} should work unconfined: ${created}`);
      }
    }
  }
});

Deno.test("a program allowed by name cannot execve another, even called directly", async () => {
  await using server = await startTestServer({ policy: { allow_commands: ["python3"] } });
  const marker = `${server.root}/EXECVE`;
  const code = `import os
try:
    os.execv("/usr/bin/touch", ["touch", ${JSON.stringify(marker)}])
except OSError as e:
    print("refused", e.errno)`;
  const r = await post(server, "/process/shell", { argv: ["python3", "-c", code] });
  assert.equal(r.body.stdout, "refused 13\n");
  assert.equal(exists(marker), false);
  // The same through run_code, which starts python3 like any program.
  const rc = await post(server, "/code/run", { language: "python", code });
  assert.equal(rc.body.stdout, "refused 13\n");
  assert.equal(exists(marker), false);
});

Deno.test("run_code respects allow_commands in every language", async () => {
  await using server = await startTestServer({ policy: { allow_commands: ["echo"] } });
  for (const language of ["python", "javascript"]) {
    const r = await post(server, "/code/run", { language, code: "print(1)" });
    assert.deepEqual([r.status, r.body.code, r.body.param], [
      403,
      "command_not_allowed",
      "language",
    ]);
  }
});

Deno.test("LD_PRELOAD set from inside a command string starts no program", {
  ignore: !exists("/usr/bin/cc"),
}, async () => {
  await using server = await startTestServer({ policy: { allow_commands: ["ls", "echo"] } });
  const marker = `${server.root}/PRELOAD`;
  const src = `${server.root}/evil.c`;
  await Deno.writeTextFile(
    src,
    `#include <stdlib.h>\n__attribute__((constructor)) static void run(void) { system("touch ${marker}"); }\n`,
  );
  const cc = await new Deno.Command("/usr/bin/cc", {
    args: ["-shared", "-fPIC", "-o", `${server.root}/evil.so`, src],
  }).output();
  assert.equal(cc.code, 0, new TextDecoder().decode(cc.stderr));
  for (
    const cmd of [
      "declare -n L=LD_PRELOAD; L=$PWD/evil.so; export L; ls",
      'N=LD_PRELOAD; export "$N=$PWD/evil.so"; ls',
    ]
  ) {
    await post(server, "/process/shell", { cmd });
    assert.equal(exists(marker), false, cmd);
  }
});
