/**
 * The allow list holds against the dynamic loader. Under `allow_commands: [echo, ls, cat]`, a
 * library in the workspace whose constructor writes a marker file must never run: not through
 * any bash spelling that sets `LD_PRELOAD`/`LD_LIBRARY_PATH` (nameref, dynamic `export`,
 * `printf -v`, `read`, `declare -x`, indirect `${!N=}`, `mapfile`), which the string guard
 * refuses, and not through a route no string guard sees (an allowed `python3` mapping the
 * library, or starting `ls` with `LD_PRELOAD`), which the kernel refuses: the workspace is
 * mounted `noexec` for the children. Judged by the marker.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const hasGcc = new Deno.Command("gcc", { args: ["--version"], stdout: "null", stderr: "null" })
  .outputSync().success;
const isRoot = Deno.uid() === 0;

async function buildLibrary(dir: string, marker: string): Promise<string> {
  const src = join(dir, "x.c");
  await Deno.writeTextFile(
    src,
    `#include <stdio.h>\n__attribute__((constructor)) static void hit(void) {\n` +
      `  FILE *f = fopen("${marker}", "a"); if (f) { fputs("ran\\n", f); fclose(f); }\n}\n`,
  );
  const lib = join(dir, "x.so");
  const out = await new Deno.Command("gcc", {
    args: ["-shared", "-fPIC", "-o", lib, src],
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  // The same library under the name `LD_PRELOAD=4` finds through `LD_LIBRARY_PATH=3`.
  await Deno.mkdir(join(dir, "3"));
  await Deno.copyFile(lib, join(dir, "3", "4"));
  return lib;
}

async function shell(server: TestServer, cmd: string) {
  const res = await server.post("/process/shell", { cmd });
  return { status: res.status, body: await res.json() };
}

Deno.test({
  name: "allow list: no bash spelling of a loader variable gets past the guard",
  ignore: !hasGcc,
  async fn(t) {
    await using server = await startTestServer({
      policy: {
        preset: "standard",
        paths: { allow: ["."] },
        allow_commands: ["echo", "ls", "cat"],
      },
    });
    const marker = join(server.root, "marker");
    const lib = await buildLibrary(server.root, marker);
    const spellings = [
      `declare -n L=LD_PRELOAD; L=${lib}; export L; ls`,
      `declare -n L; L=LD_PRELOAD; L=${lib}; export LD_PRELOAD; ls`,
      `local -n L=LD_PRELOAD 2>/dev/null; ls`,
      `typeset -xn L=LD_PRELOAD; L=${lib}; ls`,
      `N=LD_PRELOAD; export "$N=${lib}"; ls`,
      `N=LD_PRELOAD; export $N=${lib}; ls`,
      `N=LD_PRELOAD; declare -x "$N"=${lib}; ls`,
      `N=LD_PRELOAD; declare -x "$N=${lib}"; ls`,
      `N=LD_PRELOAD; printf -v "$N" %s ${lib}; export LD_PRELOAD; ls`,
      `N=LD_PRELOAD; printf -v"$N" %s ${lib}; ls`,
      `printf -v LD_PRELOAD %s ${lib}; ls`,
      `N=LD_PRELOAD; read "$N" <<< ${lib}; ls`,
      `read -r LD_PRELOAD <<< ${lib}; export LD_PRELOAD; ls`,
      `N=LD_PRELOAD; read -a "$N" <<< ${lib}; ls`,
      `N=LD_PRELOAD; mapfile -t "$N" <<< ${lib}; ls`,
      `N=LD_PRELOAD; : \${!N=${lib}}; export LD_PRELOAD; ls`,
      `N=LD_PRELOAD; getopts a "$N"; ls`,
      `export LD_LIBRARY_PATH=${server.root}/3 LD_PRELOAD=4; ls`,
      `LD_AUDIT=${lib} ls`,
      `declare -x GCONV_PATH=${server.root}; ls`,
    ];
    for (const cmd of spellings) {
      await t.step(cmd, async () => {
        const { status, body } = await shell(server, cmd);
        assert.equal(status, 403, JSON.stringify(body));
        assert.equal(body.code, "command_not_allowed");
      });
    }
    await t.step("the marker never appeared", () => {
      assert.throws(() => Deno.statSync(marker), Deno.errors.NotFound);
    });
    await t.step("plain commands still run", async () => {
      const { status, body } = await shell(server, "N=x; export N; printf -v M %s 1; ls x.so");
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.stdout, "x.so\n");
    });
  },
});

Deno.test({
  name: "allow list: the kernel refuses to map a library from the workspace, whatever runs it",
  ignore: !hasGcc || !isRoot, // a mount namespace needs CAP_SYS_ADMIN
  async fn(t) {
    await using server = await startTestServer({
      policy: {
        preset: "standard",
        paths: { allow: ["."] },
        allow_commands: ["echo", "ls", "cat", "python3"],
      },
      env: { LD_PRELOAD: "/nonexistent/inherited.so" },
    });
    const marker = join(server.root, "marker");
    const lib = await buildLibrary(server.root, marker);
    const routes: [string, string][] = [
      ["dlopen from an allowed program", `python3 -c "import ctypes; ctypes.CDLL('${lib}')"`],
      [
        "LD_PRELOAD given to an allowed program by another",
        `python3 -c "import os; os.execve('/bin/ls', ['ls'], {'LD_PRELOAD': '${lib}'})"`,
      ],
      [
        "LD_LIBRARY_PATH and LD_PRELOAD set by arithmetic under set -a",
        `set -a; X=LD_LIBRARY_PATH=3; Y=LD_PRELOAD=4; ((X)); ((Y)); ls`,
      ],
    ];
    for (const [name, cmd] of routes) {
      await t.step(name, async () => {
        await shell(server, cmd);
        assert.throws(() => Deno.statSync(marker), Deno.errors.NotFound, `${cmd} ran the library`);
      });
    }
    await t.step("no loader variable reaches a process", async () => {
      const { body } = await shell(server, 'echo "[$LD_PRELOAD]"');
      assert.equal(body.stdout, "[]\n");
    });
    await t.step("the workspace is noexec for children, still writable", async () => {
      // A child waiting on its stdin; its mount table read from outside, as root.
      const started = await (await server.post("/process/start", { cmd: "cat" })).json();
      try {
        const table = Deno.readTextFileSync(`/proc/${started.pid}/mountinfo`);
        const line = table.split("\n").find((l) => l.split(" ")[4] === server.root);
        assert.ok(line, table);
        assert.match(line, /noexec/);
      } finally {
        const res = await server.post(`/process/${started.pid}/signal`, { signal: "SIGKILL" });
        await res.body?.cancel();
      }
      const w = await shell(server, "echo hi > w.txt && cat w.txt");
      assert.equal(w.body.stdout, "hi\n");
    });
  },
});
