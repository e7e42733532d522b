/**
 * The `code` module as a code interpreter, against one real local sandbox and real kernels:
 * callbacks during the run and in order, rich results, and a context that outlives its client.
 */

import assert from "node:assert/strict";
import { type CodeOutput, Sandbox } from "../../sdk/mod.ts";
import { dropSandbarHome, useSandbarHome } from "./sandbox_helpers.ts";

const ignore = !new Deno.Command("/usr/bin/python3", {
  args: ["-c", "import ipykernel, jupyter_client, matplotlib"],
  stdout: "null",
  stderr: "null",
}).outputSync().success; // needs python3-ipykernel and python3-matplotlib

Deno.test({
  name: "code.run: onStdout during a 3-second program, onResult in order, a figure as PNG",
  ignore,
  async fn(t) {
    const home = await useSandbarHome();
    const sandbox = await Sandbox.create({ timeout: 300 });
    try {
      await t.step("output reaches onStdout before the program ends", async () => {
        const flag = "/home/user/go";
        // The program waits up to three seconds for a file the callback writes when it sees
        // the first line: "saw it" proves the line arrived while the program ran.
        const seen: string[] = [];
        const r = await sandbox.code.run(
          `import os, time
print("started", flush=True)
for _ in range(300):
    if os.path.exists(${JSON.stringify(flag)}): break
    time.sleep(0.01)
print("saw it" if os.path.exists(${JSON.stringify(flag)}) else "ended unseen")`,
          {
            onStdout: async (s) => {
              seen.push(s);
              if (s === "started\n") await sandbox.files.write(flag, "");
            },
          },
        );
        assert.deepEqual(seen, ["started\n", "saw it\n"]);
        assert.equal(r.text, "started\nsaw it");
      });
      await t.step("results and output come in the order they happened", async () => {
        const events: string[] = [];
        await sandbox.code.run(
          "from IPython.display import display, Markdown\nprint('a')\ndisplay(Markdown('**b**'))\nprint('c')\n'd'",
          {
            onStdout: (s) => void events.push(`out:${s.trim()}`),
            onResult: (r: CodeOutput) => void events.push(`result:${r.markdown ?? r.text}`),
          },
        );
        assert.deepEqual(events, ["out:a", "result:**b**", "out:c", "result:'d'"]);
      });
      await t.step("a matplotlib figure is a PNG result", async () => {
        const results: CodeOutput[] = [];
        const r = await sandbox.code.run(
          "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\nNone",
          { onResult: (x) => void results.push(x) },
        );
        assert.equal(results.length, 1, JSON.stringify(r.error));
        assert.ok(results[0].png && !results[0].isMainResult);
        assert.deepEqual(r.results, results);
        const bytes = Uint8Array.from(atob(results[0].png!), (c) => c.charCodeAt(0));
        assert.equal(new TextDecoder().decode(bytes.slice(1, 4)), "PNG");
      });
      await t.step("a context outlives the client that made it", async () => {
        const ctx = await sandbox.code.createContext({ language: "python" });
        await sandbox.code.run("kept = 'yes'", { contextId: ctx.id });
        const other = await Sandbox.connect(sandbox.id);
        const r = await other.code.run("print(kept)", { contextId: ctx.id });
        assert.equal(r.text, "yes");
        assert.ok((await other.code.listContexts()).some((c) => c.id === ctx.id));
      });
    } finally {
      await sandbox.kill();
      await dropSandbarHome(home);
    }
  },
});
