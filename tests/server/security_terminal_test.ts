/**
 * A terminal's shell is confined like every other process: it writes inside the root, and
 * neither reads `/etc/shadow` or the server's environment nor writes outside the allowed paths.
 * Judged by the files the shell leaves behind.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { exists } from "../helpers/fs.ts";

function readOrEmpty(path: string): string {
  return exists(path) ? Deno.readTextFileSync(path) : "";
}

Deno.test("a terminal's shell is confined by the kernel", async () => {
  const outside = await Deno.makeTempDir({ prefix: "sandbar-pty-outside-" });
  try {
    await using server = await startTestServer();
    const script = [
      "cat /etc/shadow > shadow.txt",
      `tr '\\0' '\\n' < /proc/$PPID/environ > environ.txt`,
      `touch ${outside}/written`,
      "echo inside > inside.txt",
      "touch DONE",
      "exec sleep 60",
    ].join("; ");
    const res = await server.fetch("/pty", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ shell: "/bin/bash", args: ["-c", script] }),
    });
    const term = await res.json();
    assert.equal(res.status, 201, JSON.stringify(term));
    // The shell's last write before it waits: the other files are complete once it is there.
    const deadline = Date.now() + 20_000;
    while (!exists(`${server.root}/DONE`)) {
      assert.ok(Date.now() < deadline, "the terminal's shell never finished its script");
      await new Promise((r) => setTimeout(r, 20));
    }
    const gone = await server.fetch(`/pty/${term.id}`, { method: "DELETE" });
    assert.equal(gone.status, 200);
    await gone.body?.cancel();
    assert.equal(Deno.readTextFileSync(`${server.root}/inside.txt`), "inside\n");
    // The redirection that reads fails first, so the file it writes is empty or never made.
    assert.equal(readOrEmpty(`${server.root}/shadow.txt`), "");
    assert.equal(readOrEmpty(`${server.root}/environ.txt`), "");
    assert.equal(exists(`${outside}/written`), false);
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
