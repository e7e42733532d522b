/**
 * The kernel bridge is a Python program of its own (`server/code/kernel_bridge.py`); Python's
 * linter reads it here, since neither `deno lint` nor `deno check` does. pyflakes finds what
 * a rename or an edit leaves behind: an undefined name, an unused import, a redefinition.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const BRIDGE = fileURLToPath(new URL("../../server/code/kernel_bridge.py", import.meta.url));

function have(program: string): boolean {
  try {
    return new Deno.Command(program, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

Deno.test({
  name: "kernel bridge: pyflakes finds nothing in server/code/kernel_bridge.py",
  // Without pyflakes3 (apt-get install pyflakes3) there is nothing to lint with.
  ignore: !have("pyflakes3"),
  fn: async () => {
    const out = await new Deno.Command("pyflakes3", {
      args: [BRIDGE],
      stdout: "piped",
      stderr: "piped",
    })
      .output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
  },
});

Deno.test("kernel bridge: the server loads the same Python as a text module", async () => {
  const { default: source } = await import("../../server/code/kernel_bridge.py", {
    with: { type: "text" },
  });
  assert.equal(source, await Deno.readTextFile(BRIDGE));
  assert.match(source, /^"""The server's kernel bridge/);
});
