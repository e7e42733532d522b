/**
 * Process trees inside a local sandbox, where the server has no cgroup file system and ends
 * trees by session and descent (`server/process/trees.ts`): a double fork, `disown` and a job in
 * a group of its own end with the command that started them, and `setsid` too while its parent
 * lives, when a background command is killed. Judged from inside the sandbox, by the pid each
 * process wrote.
 */

import assert from "node:assert/strict";
import { Sandbox } from "../../sdk/mod.ts";
import { dropSandbarHome, useSandbarHome } from "./sandbox_helpers.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

const hasBwrap = new Deno.Command("sh", {
  args: ["-c", "command -v bwrap"],
  stdout: "null",
  stderr: "null",
}).outputSync().success;

function sleeper(name: string): string {
  return `sh -c 'echo $$ > /tmp/${name}.pid; exec sleep 300' >/dev/null 2>&1 </dev/null`;
}

const FORMS: Record<string, string> = {
  setsid: `setsid ${sleeper("setsid")} &`,
  double: `( ${sleeper("double")} & ) ;`,
  disown: `${sleeper("disown")} & disown;`,
  pgrp: `set -m; ${sleeper("pgrp")} & set +m;`,
};

function waitFor(names: string[]): string {
  return names.map((n) => `while [ ! -s /tmp/${n}.pid ]; do sleep 0.01; done;`).join(" ");
}

/** `name:alive` or `name:gone` for each, a few tries until all are gone. */
async function verdicts(sandbox: Sandbox, names: string[]): Promise<string> {
  const check = names.map((n) =>
    `if kill -0 "$(cat /tmp/${n}.pid)" 2>/dev/null; then echo ${n}:alive; else echo ${n}:gone; fi`
  ).join("; ");
  let out = "";
  for (let i = 0; i < 50; i++) {
    out = (await sandbox.commands.run(check)).stdout;
    if (!out.includes(":alive")) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return out;
}

Deno.test({
  name: "local sandbox: what left its group ends with the command or background process",
  ignore: !hasBwrap,
  async fn(t) {
    await using sandbox = await Sandbox.create();
    await t.step("a command ends", async () => {
      const names = ["double", "disown", "pgrp"];
      const r = await sandbox.commands.run(
        `${names.map((n) => FORMS[n]).join(" ")} ${waitFor(names)} echo started`,
      );
      assert.equal(r.stdout, "started\n", r.stderr);
      assert.equal(await verdicts(sandbox, names), "double:gone\ndisown:gone\npgrp:gone\n");
    });
    await t.step("a background command is killed", async () => {
      const names = ["setsid", "double", "disown", "pgrp"];
      await sandbox.commands.run(`rm -f ${names.map((n) => `/tmp/${n}.pid`).join(" ")}`);
      const handle = await sandbox.commands.start(
        `${names.map((n) => FORMS[n]).join(" ")} ${waitFor(names)} echo started; sleep 300`,
      );
      await sandbox.commands.run(waitFor(names));
      const before = await sandbox.commands.run(
        names.map((n) => `kill -0 "$(cat /tmp/${n}.pid)" && echo ${n}:alive`).join("; "),
      );
      assert.equal(before.stdout, "setsid:alive\ndouble:alive\ndisown:alive\npgrp:alive\n");
      await sandbox.commands.kill(handle.pid);
      assert.equal(
        await verdicts(sandbox, names),
        "setsid:gone\ndouble:gone\ndisown:gone\npgrp:gone\n",
      );
    });
  },
});
